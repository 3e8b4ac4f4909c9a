// What a stub asks the server during an execution, other than about the instance's own requests
// (is_cancelled stays with the instance): BLS calls and streams, model control
// (pb_utils.is_model_ready / load_model / unload_model) and pb_utils.MetricFamily calls. Each
// function writes its answer on `stub`; the caller holds its instance's lock, because the stub has
// one socket and the instance answers its questions in order.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nereid/status.h"
#include "python/custom_metrics.h"
#include "python/python_shared.h"
#include "python/stub_process.h"
#include "python/stub_protocol.h"

namespace nereid::backends::python {

struct BlsStream;
struct BlsBell;

// The decoupled BLS calls (exec(decoupled=True)) of one stub that are still open, by stream id
// (the tag of the stub's "bls" message). Their responses queue here as the called model sends
// them; each goes to the stub when it asks for the next one ("bls_next"). A "bls_next" whose
// stream has nothing queued yet waits here, not in the reader: the instance's thread goes on
// reading the stub (another exec(), is_cancelled(), logs, metrics of the stub's other threads are
// answered at once), polls bell_fd() with the stub's socket, and calls AnswerDue when it rings or
// the earliest waiting deadline passes.
// Not thread-safe: used under its instance's lock (the called model's threads only queue and ring).
class BlsStreams {
 public:
  BlsStreams();
  BlsStreams(const BlsStreams&) = delete;
  BlsStreams& operator=(const BlsStreams&) = delete;
  ~BlsStreams() { CancelAll(); }

  // Starts the call of a "bls" message with `decoupled` set (inputs in `*payload`, which the call
  // takes, or pinned in `stub`'s pool), traced as a child of `parent_trace` when set; nothing is
  // answered yet.
  void Start(const Settings& settings, const StubMessage& m, std::vector<char>* payload,
             std::shared_ptr<const void> parent_trace, StubProcess& stub);
  // Starts a "bls" call without `decoupled` of a thread other than the execution's (while the
  // instance is idle, or `m.apart` during an execution): its one answer waits as a "bls_next" of
  // the call's own tag (until `deadline`: then answered as timed out, the call cancelled), which
  // AnswerDue writes, tensors on the socket. Nothing waits for the call, so the called model may
  // be this very instance.
  void StartCall(const Settings& settings, const StubMessage& m, std::vector<char>* payload,
                 std::shared_ptr<const void> parent_trace,
                 std::chrono::steady_clock::time_point deadline, StubProcess& stub);
  // "bls_next" (stream `m.request`): answered at once with the stream's next response when one is
  // queued (and no earlier "bls_next" of the stream waits), or when the stream is not open; else
  // the question waits (until `deadline`) and AnswerDue answers it.
  Status Next(const StubMessage& m, std::chrono::steady_clock::time_point deadline,
              StubProcess& stub);
  // Writes the answers now due, in order per stream: queued responses for the waiting "bls_next",
  // and the waiting ones whose deadline passed (answered as timed out, final; the call cancelled).
  // Clears the bell.
  Status AnswerDue(StubProcess& stub);
  // Whether a "bls_next" waits for its answer.
  bool waiting() const { return waiting_ > 0; }
  // The earliest deadline of the waiting "bls_next" (time_point::max(): none).
  std::chrono::steady_clock::time_point earliest() const;
  // Readable (an eventfd) once a stream a "bls_next" waits on got a response; -1 when no eventfd
  // could be made (the reader then polls AnswerDue in short slices).
  int bell_fd() const;
  // "bls_cancel" (stream `m.request`): cancels the called request (API v6 InferCall::cancel;
  // Triton's ResponseIterator.cancel()); its responses still come. With `m.flags` 1 (an iterator
  // dropped before its end) they are discarded and the stream forgotten. Answered only when the
  // stub waits for it (`m.tag` != 0).
  Status Cancel(const StubMessage& m, StubProcess& stub);
  // Cancels and forgets every stream (the stub is gone, or the instance ends). With `stub`, the
  // waiting "bls_next" are answered with `why` first (the stub lives on: the model unloads).
  void CancelAll(StubProcess* stub = nullptr, const Status& why = Status::Ok());
  size_t size() const { return streams_.size(); }

 private:
  // Names `stream` by the call's tag (dropping an older one of that tag) and starts `call`, whose
  // end pushes the final answer.
  void Launch(const Settings& settings, const StubMessage& m, backend::InferCall& call,
              const std::shared_ptr<BlsStream>& stream);

  std::map<int64_t, std::shared_ptr<BlsStream>> streams_;
  std::shared_ptr<BlsBell> bell_;
  size_t waiting_ = 0;  // the "bls_next" not answered yet, over all streams
};

// Whether `m` is a BLS or model-control question (whose payload the caller reads whole).
bool IsServerQuestion(const StubMessage& m);

// Answers a BLS call (its inputs in `*payload`, which the call takes, or pinned in the stub's pool,
// so the called request reads them without a copy: backend API v8 InferCall::inputs_owner; waiting
// for the called model until `deadline`: a call still running then is answered as timed out), a BLS
// stream's question (`streams`) or a model-control call. `executing`: asked during the instance's
// Execute; a call of execute's own (not `m.apart`) is then waited for (the scheduler marked this
// instance busy, so it is never handed the call): the called model may run on this thread
// (InferCall::allow_inline). A call of another thread, or made while the instance is idle (the
// watcher reads it), is not waited for: StartCall.
// `parent_trace`: the trace a BLS call continues (backend API v9 InferCall::parent_trace;
// BlsParentTrace), or empty.
Status AnswerServerQuestion(const Settings& settings, const StubMessage& m,
                            std::vector<char>* payload,
                            std::chrono::steady_clock::time_point deadline, bool executing,
                            std::shared_ptr<const void> parent_trace, BlsStreams& streams,
                            StubProcess& stub);

// A pb_utils.MetricFamily / Metric call of the stub whose metrics are owned by `owner`: applied to
// `metrics` and answered (but "release"). A malformed message is an error of the channel.
Status AnswerMetric(CustomMetrics& metrics, int64_t owner, const std::string& json,
                    StubProcess& stub);

}  // namespace nereid::backends::python
