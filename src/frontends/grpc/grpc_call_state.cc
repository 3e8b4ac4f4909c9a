#include "frontends/grpc/grpc_call_state.h"

#include <string>

#include "common/logging.h"

namespace nereid::grpc_frontend {
namespace {

const char* What(UnaryStage) { return "gRPC call"; }
const char* What(StreamReadState) { return "gRPC stream read"; }
const char* What(StreamWriteState) { return "gRPC stream write"; }

}  // namespace

const char* StateName(UnaryStage s) {
  switch (s) {
    case UnaryStage::kListening:
      return "LISTENING";
    case UnaryStage::kProcessing:
      return "PROCESSING";
    case UnaryStage::kFinishing:
      return "FINISHING";
  }
  return "INVALID";
}

const char* StateName(StreamReadState s) {
  switch (s) {
    case StreamReadState::kStarting:
      return "STARTING";
    case StreamReadState::kReading:
      return "READING";
    case StreamReadState::kHandling:
      return "HANDLING";
    case StreamReadState::kAbandoned:
      return "ABANDONED";
    case StreamReadState::kDone:
      return "DONE";
  }
  return "INVALID";
}

const char* StateName(StreamWriteState s) {
  switch (s) {
    case StreamWriteState::kIdle:
      return "IDLE";
    case StreamWriteState::kWriting:
      return "WRITING";
    case StreamWriteState::kFinishing:
      return "FINISHING";
    case StreamWriteState::kFinished:
      return "FINISHED";
    case StreamWriteState::kBroken:
      return "BROKEN";
    case StreamWriteState::kBrokenWriting:
      return "BROKEN_WRITING";
  }
  return "INVALID";
}

bool IsLegalTransition(UnaryStage from, UnaryStage to) {
  return (from == UnaryStage::kListening && to == UnaryStage::kProcessing) ||
         (from == UnaryStage::kProcessing && to == UnaryStage::kFinishing);
}

bool IsLegalTransition(StreamReadState from, StreamReadState to) {
  using S = StreamReadState;
  switch (from) {
    case S::kStarting:
      return to == S::kReading || to == S::kDone || to == S::kAbandoned;
    case S::kReading:
      return to == S::kHandling || to == S::kDone;
    case S::kHandling:
      return to == S::kReading || to == S::kDone || to == S::kAbandoned;
    case S::kAbandoned:
    case S::kDone:
      return false;
  }
  return false;
}

bool IsLegalTransition(StreamWriteState from, StreamWriteState to) {
  using S = StreamWriteState;
  switch (from) {
    case S::kIdle:
      return to == S::kWriting || to == S::kFinishing || to == S::kBroken;
    case S::kWriting:
      return to == S::kIdle || to == S::kBroken || to == S::kBrokenWriting;
    case S::kBrokenWriting:
      return to == S::kBroken;
    case S::kFinishing:
      return to == S::kFinished;
    case S::kFinished:
    case S::kBroken:
      return false;
  }
  return false;
}

template <typename State>
Status Lifecycle<State>::MoveTo(State to) {
  if (!IsLegalTransition(state_, to)) {
    return Internal(std::string("illegal ") + What(state_) + " transition " + StateName(state_) +
                    " -> " + StateName(to));
  }
  state_ = to;
  return Status::Ok();
}

template <typename State>
void Move(Lifecycle<State>& lifecycle, State to) {
  if (Status s = lifecycle.MoveTo(to); !s.ok()) LOG_ERROR("{}", s.message());
}

template class Lifecycle<UnaryStage>;
template class Lifecycle<StreamReadState>;
template class Lifecycle<StreamWriteState>;
template void Move(Lifecycle<UnaryStage>&, UnaryStage);
template void Move(Lifecycle<StreamReadState>&, StreamReadState);
template void Move(Lifecycle<StreamWriteState>&, StreamWriteState);

}  // namespace nereid::grpc_frontend
