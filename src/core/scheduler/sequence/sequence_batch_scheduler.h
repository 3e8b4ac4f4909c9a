// SequenceBatchScheduler: Triton's sequence batcher (REFERENCE.md §2.3, seeds 000 and 003).
// Every request names its sequence (correlation ID); a sequence is bound to one batch slot of one
// model instance for its whole life (SequenceTable), so all its requests run, in order, on that
// instance. Each instance has one executor thread that forms that instance's batches:
//   - Direct: one slot per batch row (max_batch_size slots); a batch holds the oldest waiting
//     request of every slot, each in its slot's row, with empty rows below the highest used one
//     filled by zero requests whose READY is false. With minimum_slot_utilization > 0 the executor
//     waits up to max_queue_delay for enough slots to have a request.
//   - Oldest: max_candidate_sequences slots; the oldest waiting request of each candidate
//     sequence is offered to FormBatch (batch_former.h: preferred sizes, max_queue_delay), so a
//     batch never holds two requests of one sequence; preserve_ordering delivers responses in the
//     order requests left the queue.
// Requests batch together when their inputs have equal names, data types and shapes, except for
// the shapes of ragged inputs (allow_ragged_batch, BatchShapeKey), which batch whatever they are
// under both strategies, as in Triton; a Direct filler row copies the first request's shapes.
// Sequences beyond the slots wait in a backlog and take a slot as soon as one is freed (END taken
// or idle release). A reaper thread releases sequences idle for max_sequence_idle_microseconds.
// Cancellation (cancel_token.h): a sequence whose oldest queued request was cancelled is dropped
// whole — that request and the ones queued behind it are answered CANCELLED "Request was
// cancelled" (failure reason CANCELED) and the sequence gives up its slot or backlog place, as in
// Triton where cancelling a sequence request cancels the rest of the sequence. Executors check
// the heads of their slots before forming a batch; backlogged sequences are checked when the
// backlog is full.
// Bound: at most options.max_backlog_size requests (0: unbounded) wait in the backlog (requests
// of sequences without a slot); one more that would wait there is refused with UNAVAILABLE
// "Exceeds maximum queue size" (docs/adr/0010-sequence-backlog-bound.md). Requests of sequences
// that own a slot are never refused, so a slot holder can always end. When a burst of at least
// kShrinkAfter queued requests has drained, the table's containers shrink and the allocator returns
// free memory.
//
// Request timeouts (Triton's): a request's `timeout` parameter bounds how long its sequence may
// wait in the backlog; when it runs out, the reaper answers every queued request of the sequence
// UNAVAILABLE "timeout of the corresponding sequence has been expired" and forgets the sequence.
// A sequence that owns a slot never times out (neither strategy has a queue policy in Triton).
//
// Test hooks (scheduler_test_hooks.h), Triton's: with delay_count N, a Direct executor takes
// nothing until N requests are queued in slots (all instances together) and, with
// backlog_delay_count M, M in the backlog; an Oldest executor until N of its candidate sequences
// have a request waiting. Each executor is held once.
//
// iterative_sequence (Triton's IterativeSequencer): a request without a correlation ID gets one
// (1, 2, ...) and the START flag alone. A backend may reschedule a request it executed (backend
// API v7 ExecuteArgs::release_flags): the request goes back to the end of its sequence's queue,
// keeping the sequence's slot and state, and runs again with flags 0 (START and END control
// inputs false), with its queue time counted from then; decoupled requests continue their
// responses through a new sender, non-decoupled ones get no response for that execution. Each
// execution counts as one success and one execution in the statistics (as Triton's backends
// report them). A request released for good ends its sequence: the slot is freed at once (Triton
// cancels the sequence then), so the next request of that ID needs START. With preserve_ordering a
// rescheduled request keeps its place in the delivery order. Other models cannot take a request
// back: the backend's reschedule fails the request with Triton's text (instance_runner.h
// RescheduleRefused).
//
// Implicit state lives in the table entry of its sequence and is fed to, and taken from, every
// execution (sequence_tensors.h).
//
// Thread-safety: Enqueue from any thread; Stop once, by the owner.
// Locks: mu_ guards the table and stopping_; it is a leaf, never held while a backend, a callback
// or a tensor copy runs. ordered_ (OrderedDelivery; Oldest preserve_ordering) has its own leaf
// lock, held only for its bookkeeping, never while callbacks run, and never taken with mu_ held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "core/model/decoupled_sender.h"
#include "core/model/model_info.h"
#include "core/scheduler/executor_threads.h"
#include "core/scheduler/ordered_delivery.h"
#include "core/scheduler/scheduler.h"
#include "core/scheduler/sequence/sequence_options.h"
#include "core/scheduler/sequence/sequence_table.h"
#include "core/scheduler/sequence/sequence_tensors.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

class SequenceBatchScheduler final : public Scheduler {
 public:
  // Takes the instances; `model` and `stats` must outlive the scheduler.
  SequenceBatchScheduler(const ModelInfo* model, ModelStats* stats, SequenceOptions options,
                         std::vector<std::unique_ptr<backend::ModelInstance>>&& instances);
  ~SequenceBatchScheduler() override;

  void Enqueue(SchedulerJob&& job, bool allow_inline) override EXCLUDES(mu_);
  void Stop() override EXCLUDES(mu_);
  bool IsExecutorThread() const override;

 private:
  static constexpr uint64_t kNoOrder = UINT64_MAX;
  struct Job {
    SchedulerJob job;
    bool start = false;
    bool end = false;  // the request's END flag (the END control input)
    CorrelationId corrid;
    std::vector<std::string> client_outputs;  // what the response keeps, in order
    std::string shape_key;                    // BatchShapeKey of the client's inputs (ragged-aware)
    // Rescheduling (iterative_sequence): the client's inputs (the executor adds control and state
    // inputs after them), the delivery order given when first taken, whether `job.done` already
    // delivers in that order (decoupled), and where the request's responses stand.
    size_t client_inputs = 0;
    uint64_t order = kNoOrder;
    bool done_ordered = false;
    ResponseProgress progress;
  };
  using Table = SequenceTable<Job, StoredState>;
  struct Taken {
    Job job;
    bool end = false;
    size_t slot = 0;
    Table::SequencePtr seq;
    bool rescheduled = false;  // the backend asked for the request again: it is back in `job`
  };
  using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

  Status ParseSequence(const InferenceRequest& request, int64_t batch_size, Job* job,
                       bool* end) const;
  void ExecutorLoop(size_t instance) EXCLUDES(mu_);
  // With mu_ held: true while the delay_count test hook holds `instance`.
  bool HeldLocked(size_t instance) REQUIRES(mu_);
  // With mu_ held: the requests to run now on `instance` (empty: wait until *wake_ns, 0 = event).
  std::vector<Taken> TakeDirect(size_t instance, uint64_t now_ns, uint64_t* wake_ns) REQUIRES(mu_);
  std::vector<Taken> TakeOldest(size_t instance, uint64_t now_ns, uint64_t* wake_ns) REQUIRES(mu_);
  // Executes `batch`; returns the results of a non-decoupled model's requests, in batch order.
  std::vector<Result> Run(size_t instance, std::vector<Taken>& batch) EXCLUDES(mu_);
  // Answers the requests of `batch` that were not rescheduled (non-decoupled models).
  void Deliver(std::vector<Taken>& batch, std::vector<Result>& results) EXCLUDES(mu_);
  void RunGroup(size_t instance, std::vector<Taken>& batch, const std::vector<size_t>& group,
                std::vector<Result>* results) EXCLUDES(mu_);
  // The requests of `group` as execution rows (Direct: one row per slot, fillers between) and the
  // row of each; takes the requests out of `batch`.
  std::vector<std::unique_ptr<InferenceRequest>> GroupRows(std::vector<Taken>& batch,
                                                           const std::vector<size_t>& group,
                                                           std::vector<int>* row_of);
  // Decoupled models: one sender per row (decoupled_batch_runner.h); each request's callback is
  // called by its sender.
  void RunDecoupledGroup(size_t instance, std::vector<Taken>& batch,
                         const std::vector<size_t>& group) EXCLUDES(mu_);
  // With mu_ held, after an execution: puts each rescheduled request back in its sequence's
  // queue, ends the iterative sequences whose request was released, and finishes the rest. A
  // rescheduled request whose sequence ended meanwhile goes to *orphans.
  void AfterRunLocked(std::vector<Taken>& batch, uint64_t now, std::vector<Job>* orphans)
      REQUIRES(mu_);
  // Without mu_: fails the orphans as Triton's re-enqueue of a request without START would.
  void RejectOrphans(std::vector<Job>& orphans) EXCLUDES(mu_);
  void ReaperLoop() EXCLUDES(mu_);
  void Reject(SchedulerJob& job, const Status& status) EXCLUDES(mu_);
  // With mu_ held: drops the sequences in the slots of `instance` whose oldest request was
  // cancelled (and those promoted into the freed slots after them); their jobs go to *dropped.
  void DropCancelledLocked(size_t instance, std::vector<Job>* dropped) REQUIRES(mu_);
  // Without mu_: answers the dropped jobs CANCELLED.
  void AnswerCancelled(std::vector<Job>& dropped) EXCLUDES(mu_);
  // With mu_ held, after requests left the table: true when a large burst has drained (the
  // caller then returns free memory to the system, without the lock).
  bool ShrinkIfDrainedLocked() REQUIRES(mu_);
  // Without mu_: returns the allocator's free memory to the system (after ShrinkIfDrainedLocked).
  void ReturnMemory() EXCLUDES(mu_);

  static constexpr size_t kShrinkAfter = 256;

  const ModelInfo* model_;
  const ModelInfo exec_info_;  // with control and state tensors
  ModelStats* stats_;
  const SequenceOptions options_;
  std::vector<std::unique_ptr<backend::ModelInstance>> instances_;
  ExecutorThreads threads_;
  std::thread reaper_;

  Mutex mu_;
  std::vector<std::unique_ptr<std::condition_variable>> cvs_;  // one per instance
  std::condition_variable reaper_cv_;
  Table table_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;   // order in which requests left the queue
  size_t peak_queued_ GUARDED_BY(mu_) = 0;  // most requests queued since the table last drained
  std::vector<size_t> delay_remaining_ GUARDED_BY(mu_);  // per instance; 0 once released

  OrderedDelivery ordered_;  // preserve_ordering
  // iterative_sequence: the correlation ID given to a request without one (Triton counts from 1).
  mutable std::atomic<uint64_t> next_auto_id_{1};
};

}  // namespace nereid
