// Internal to the Python backend (python_instance.cc, python_instance_execute.cc): one instance
// of a Python model: its stub process, the execution of requests on it, the watcher that
// restarts a dead stub, and the decoupled requests still sending after their execute returned.
// See docs/python_backend.md.
//
// Thread-safety: a PythonInstance is used by one Execute at a time (the core's contract) and by
// its watcher thread, which restarts a dead stub and, while the instance is idle, reads what a
// decoupled model's sender threads send for requests of earlier executions and answers a BLS
// stream's "bls_next" still waiting (and whatever the stub asks meanwhile): both hold the
// instance's mutex while they use the stub.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "nereid/backend_api.h"
#include "nereid/status.h"
#include "python/batch_split.h"
#include "python/block_claims.h"
#include "python/exit_waiter.h"
#include "python/lock_counters.h"
#include "python/python_shared.h"
#include "python/stub_protocol.h"
#include "python/stub_questions.h"

namespace nereid::backends::python {

class PythonInstance final : public backend::ModelInstance {
 public:
  PythonInstance(std::shared_ptr<const ModelShared> model, backend::InstanceOptions options)
      : model_(std::move(model)), options_(std::move(options)) {}

  ~PythonInstance() override;

  // Starts the stub, runs initialize(args) and the watcher that restarts a stub that dies while
  // the instance is idle. The error carries the Python error text.
  Status StartFirst();

  // model.py's is_ready() (backend API v6), asked of the stub while the instance is idle; while
  // it executes, reads for a sender thread or restarts its stub, the last answer stands.
  Status CheckReady() override;

  // Runs one execution on the stub (python_instance_execute.cc); a stub that dies, hangs or breaks
  // the protocol fails it and is restarted by the watcher.
  Status Execute(const backend::ExecuteArgs& args) override;

 private:
  std::string Restarting() const {
    return "stub process of instance '" + options_.name + "' is restarting";
  }
  std::string RestartFailed(const Status& s) const {
    return "stub process of instance '" + options_.name +
           "' failed to restart: " + std::string(s.message());
  }

  void ReportHealth(bool healthy, const std::string& reason) const {
    if (options_.report_health) options_.report_health(healthy, reason);
  }

  // Starts the stub and runs initialize(args).
  Status Start() REQUIRES(mu_);

  // Runs initialize(args) on the new stub, answering its logs, metrics and model control.
  Status Initialize() REQUIRES(mu_);

  // The stub's pool (empty: none).
  std::span<const char> PoolBytes() const REQUIRES(mu_) {
    return stub_->pool() != nullptr ? stub_->pool()->bytes() : std::span<const char>();
  }

  // A message of the stub: the tensors it left in the pool lie inside it.
  StatusOr<StubMessage> Parse(std::string_view header, uint64_t payload_size) REQUIRES(mu_) {
    return ParseStubMessage(header, payload_size,
                            stub_->pool() != nullptr ? stub_->pool()->size() : 0);
  }

  // A pb_utils.MetricFamily / Metric call of the stub (stub_questions.h).
  Status HandleMetric(const std::string& json) REQUIRES(mu_) {
    return AnswerMetric(*model_->settings->metrics, metrics_owner_, json, *stub_);
  }
  // The watcher thread: restarts the stub whenever the one it watches is gone (killed from
  // outside, crashed, or killed by Execute after a failure), reporting the instance unhealthy
  // meanwhile (docs/adr/0015-instance-health.md).
  void Watch();

  // Replaces a dead (or broken) stub, failing the requests still waiting for its responses.
  void Restart() REQUIRES(mu_);
  // Logs why the idle stub broke the protocol (`why`, asked `during`) and restarts it.
  void RestartBroken(const Status& why, std::string_view during = "") REQUIRES(mu_);

  // Asks the idle stub's is_ready(): "" (ready) or why not. A stub that breaks the protocol or
  // does not answer within stub-timeout-seconds is restarted, as in ReadIdle.
  StatusOr<std::string> AskReady() REQUIRES(mu_);

  // The instance is idle and the stub sent something (a sender thread of a decoupled model): one
  // frame, handled as during an execution. A stub that breaks the protocol is restarted.
  void ReadIdle() REQUIRES(mu_);
  // The stub rang its idle bell (a thread of model.py wrote while no execution was under way:
  // BLS, model control, a metric, a log line): reads and answers what it wrote, its answers'
  // tensors on the socket.
  void ReadRung() REQUIRES(mu_);

  // Fails every request still waiting for its FINAL (the stub is gone, the instance ends or the
  // model unloads) with `error` (default: NotHealthy()).
  void FailPending(const Status& error = Status::Ok()) REQUIRES(mu_);

  // A decoupled request got its FINAL (or its execution failed): its group's blocks may go once
  // every request of the group is done and its execute returned.
  void FinishRequest(int64_t id) REQUIRES(mu_);

  void CloseGroup(int64_t group) REQUIRES(mu_) {
    group_left_.erase(group);
    claims_.Close(group);
  }

  // Blocks written for the stub since the last call may be viewed by any request still sending.
  void ClaimWritten() REQUIRES(mu_) {
    for (uint64_t offset : stub_->TakeWrittenBlocks()) claims_.ClaimByAll(offset);
  }

  // Frees the pool's blocks no request may view any more (ADR 0014): all of them when no
  // decoupled request is still sending.
  void FreeBlocks() REQUIRES(mu_);

 private:
  Status NotHealthy() const {
    return Internal("Failed to process the request(s) for model instance '" + options_.name +
                    "', message: Stub process is not healthy.");
  }

  Status Unloaded() const {
    return Unavailable("Failed to process the request(s) for model instance '" + options_.name +
                       "', message: the model is unloading and the request had not sent its "
                       "final response.");
  }

  Status Failed(const std::string& message) const {
    return Internal("Failed to process the request(s) for model '" + options_.name +
                    "', message: " + message);
  }

  // Any error of the channel marks the stub broken (Execute restarts it). Not told by the code:
  // a model's own TritonError may be UNAVAILABLE too.
  Status Channel(const Status& s) REQUIRES(mu_) {
    if (s.ok()) return s;
    broken_ = true;
    return Status(StatusCode::kUnavailable, std::string(s.message()));
  }

  Status RunOnStub(const backend::ExecuteArgs& args) REQUIRES(mu_);

  Status ReadResult(const backend::ExecuteArgs& args, std::span<const RequestHeader> requests,
                    std::chrono::steady_clock::time_point deadline) REQUIRES(mu_);

  // Before the next frame of the stub: while a "bls_next" waits (BlsStreams), waits for the
  // stub's socket, a stream's response (the streams' bell) or the earliest waiting deadline,
  // answering what is due meanwhile. Returns when the stub has bytes to read, nothing waits any
  // more, or `deadline` passed (the read then times out as before).
  Status AwaitStub(std::chrono::steady_clock::time_point deadline) REQUIRES(mu_);

  // The watcher (the instance idle): answers the "bls_next" now due; a stub that cannot be
  // written is restarted.
  void AnswerStreamsIdle() REQUIRES(mu_);

  Status ReadPayload(uint64_t size, std::chrono::steady_clock::time_point deadline,
                     std::vector<char>* payload) REQUIRES(mu_);
  // Answers what the stub asks during an execution (BLS, is_cancelled, model control); false
  // when `m` is no question. A BLS call takes `*payload`.
  StatusOr<bool> AnswerQuestion(const StubMessage& m, std::vector<char>* payload,
                                std::chrono::steady_clock::time_point deadline,
                                const backend::ExecuteArgs* args) REQUIRES(mu_);

  // Answers request.is_cancelled() of request id `m.request`: the state of its response sender
  // (decoupled models; false once it sent FINAL), else the request's own cancellation state (API
  // v5) during the execution `args` (null: idle).
  Status AnswerCancelled(const StubMessage& m, const backend::ExecuteArgs* args) REQUIRES(mu_);

  // Reads the payload of a "result" straight into the core's output buffers.
  Status WriteOutputs(const StubMessage& m, uint64_t payload_size, const backend::ExecuteArgs& args,
                      std::chrono::steady_clock::time_point deadline) REQUIRES(mu_);

  // Reads the stub until the decoupled execute returned; requests without FINAL stay pending
  // (the watcher reads their responses while the instance is idle).
  Status ReadDecoupled(const backend::ExecuteArgs& args,
                       std::chrono::steady_clock::time_point deadline) REQUIRES(mu_);

  // One frame of a decoupled model's stub, during the execution `args` (null: idle); `done` when
  // the execute returned.
  Status ReadDecoupledFrame(const backend::ExecuteArgs* args,
                            std::chrono::steady_clock::time_point deadline, bool* done)
      REQUIRES(mu_);

  // request.set_release_flags(...) of request id `m.request` of the execution `args`, sent by the
  // stub before execute's answer (backend API v7 ExecuteArgs::release_flags). A decoupled request
  // the core takes back for a later execution is no longer pending here: its next execution
  // brings a new sender.
  Status Release(const StubMessage& m, const backend::ExecuteArgs& args) REQUIRES(mu_);

  // A decoupled response: to the sender of request id `m.request`. A response for a request that
  // has ended (its execution failed) is dropped; the stub refuses sends after FINAL itself.
  Status Send(const StubMessage& m, std::span<const char> payload) REQUIRES(mu_);

  const std::shared_ptr<const ModelShared> model_;
  const backend::InstanceOptions options_;
  // Held by Execute for the whole execution and by the watcher for a restart.
  Mutex mu_;
  std::unique_ptr<StubProcess> stub_ GUARDED_BY(mu_);
  bool broken_ GUARDED_BY(mu_) = false;        // set by Channel() during one Execute
  std::atomic<bool> restarting_{false};        // the watcher is replacing the stub
  std::atomic<bool> stopping_{false};          // the instance is being destroyed
  std::atomic<pid_t> starting_pid_{0};         // the stub running initialize(), for the destructor
  int64_t metrics_owner_ GUARDED_BY(mu_) = 0;  // the stub's CustomMetrics owner id
  // Request ids (EncodeExecute): the next one, and the first of the current execution.
  int64_t next_request_ GUARDED_BY(mu_) = 0;
  int64_t first_request_ GUARDED_BY(mu_) = 0;
  std::string header_ GUARDED_BY(mu_);  // frame headers to and from the stub, capacity reused
  // Decoupled requests without FINAL yet, by id, with their execution (group, its first id).
  // They are held as long as the model holds them (as in Triton), until the unload notice.
  struct Pending {
    std::shared_ptr<backend::ResponseSender> sender;
    int64_t group = 0;
  };
  std::map<int64_t, Pending> pending_ GUARDED_BY(mu_);
  std::map<int64_t, int> group_left_ GUARDED_BY(mu_);  // group -> its requests still pending
  int64_t executing_group_ GUARDED_BY(mu_) = -1;       // the group whose execute runs
  BlockClaims claims_ GUARDED_BY(mu_);                 // who may still view which pool block
  BlsStreams bls_streams_ GUARDED_BY(mu_);             // the stub's open exec(decoupled=True)
  std::unique_ptr<ExitWaiter> waiter_;                 // set before watcher_ starts
  int unload_id_ = -1;                                 // our wake-up in model_->unload
  std::thread watcher_;
  // is_ready() (CheckReady): whether model.py has one (told by initialize's answer); the
  // executions and idle reads under way (the stub is not asked then: a model asking its own
  // readiness from execute or a sender thread would wait for itself); the last answer ("":
  // ready); where ReadDecoupledFrame puts the answer while CheckReady waits for it.
  std::atomic<bool> has_is_ready_{false};
  std::atomic<int> busy_{0};
  // Executions and is_ready() questions waiting for mu_ (CountedLock): ReadRung yields to them,
  // as each reads the stub's frames up to its own answer once it has the lock. busy_ would not
  // do: it also counts an execution that has released mu_ and is returning, which reads no more.
  std::atomic<int> lock_waiters_{0};
  Mutex ready_mu_ ACQUIRED_AFTER(mu_);
  std::string last_ready_ GUARDED_BY(ready_mu_);
  std::string* ready_answer_ GUARDED_BY(mu_) = nullptr;
};

}  // namespace nereid::backends::python
