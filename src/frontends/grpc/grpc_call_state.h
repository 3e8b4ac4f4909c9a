// The states of the gRPC frontend's call objects, and the one function per state machine that
// moves them. Pure (no grpc++): the call objects hold these and move them only through MoveTo,
// which refuses a move the diagrams below do not have (a frontend bug, logged by the caller).
//
// Unary calls (UnaryCall, LoadCall):
//
//   kListening --(call matched)--> kProcessing --(Finish started)--> kFinishing --> deleted
//   kListening --(no call matched: shutdown)--> deleted
//
// A stream (ModelStreamInfer) reads and writes at the same time, so it has two sides, each one
// enum. The read side:
//
//   kStarting --(first Read started)--> kReading --(request read)--> kHandling
//       |                                  |  ^                         |  |
//       |                                  |  +----(next Read started)--+  |
//       |                                  +--(half-close, failure)--> kDone <--(stream ended)
//       +--(refused: restricted protocol)--> kDone
//   kStarting / kHandling --(completion queue shut down: no Read may start)--> kAbandoned
//
// kStarting counts as reading: the done notification may arrive on another thread before the
// first Read starts, and must not delete the call under it. The write side:
//
//   kIdle --(Write started)--> kWriting --(written)--> kIdle
//   kIdle --(Finish started)--> kFinishing --(finished)--> kFinished
//   kIdle --(call broken: cancelled)--> kBroken
//   kWriting --(write failed)--> kBroken
//   kWriting --(cancelled while the Write is outstanding)--> kBrokenWriting --(its event)-->
//   kBroken
//
// A broken call is never finished (gRPC would refuse); a cancellation while finishing changes
// nothing (the Finish's event still arrives).
//
// Thread-safety: plain values; a lifecycle is guarded by its owner (UnaryCall: one thread at a
// time through the completion queue; StreamCall: its mu_).
#pragma once

#include "nereid/status.h"

namespace nereid::grpc_frontend {

enum class UnaryStage : unsigned char { kListening, kProcessing, kFinishing };
enum class StreamReadState : unsigned char { kStarting, kReading, kHandling, kAbandoned, kDone };
enum class StreamWriteState : unsigned char {
  kIdle,
  kWriting,
  kFinishing,
  kFinished,
  kBroken,
  kBrokenWriting
};

const char* StateName(UnaryStage s);
const char* StateName(StreamReadState s);
const char* StateName(StreamWriteState s);

bool IsLegalTransition(UnaryStage from, UnaryStage to);
bool IsLegalTransition(StreamReadState from, StreamReadState to);
bool IsLegalTransition(StreamWriteState from, StreamWriteState to);

// One state and its only mover. An illegal move changes nothing and returns Internal
// "illegal <what> transition FROM -> TO".
template <typename State>
class Lifecycle {
 public:
  explicit Lifecycle(State initial) : state_(initial) {}
  State state() const { return state_; }
  Status MoveTo(State to);

 private:
  State state_;
};

// MoveTo, logging an illegal move (a frontend bug) as an error instead of applying it.
template <typename State>
void Move(Lifecycle<State>& lifecycle, State to);

extern template class Lifecycle<UnaryStage>;
extern template class Lifecycle<StreamReadState>;
extern template class Lifecycle<StreamWriteState>;

// Whether the read side may still touch the call (a Read outstanding, a request being handed
// over, or the first Read not yet started): the call is not deleted meanwhile.
inline bool ReadBusy(StreamReadState s) {
  return s == StreamReadState::kStarting || s == StreamReadState::kReading ||
         s == StreamReadState::kHandling;
}
// Whether a completion-queue event of the write side (a Write or the Finish) is still to come.
inline bool WriteBusy(StreamWriteState s) {
  return s == StreamWriteState::kWriting || s == StreamWriteState::kBrokenWriting ||
         s == StreamWriteState::kFinishing;
}

}  // namespace nereid::grpc_frontend
