// DynamicBatchScheduler: Triton's dynamic batcher (REFERENCE.md §2.2, seed 003). Requests wait
// in one queue per priority level; whenever a model instance is idle, its executor thread takes
// the queue lock, asks FormBatch (batch_former.h) what to do, takes the chosen requests off the
// queue, releases the lock and runs them as one execution (batch_runner.h). There is no separate
// batcher thread: each idle executor forms its own batch, so a formed batch never waits for a
// hand-off, and no lock is held while a backend runs.
//
// Queue policy: a level's `max_queue_size` rejects at once (UNAVAILABLE "Exceeds maximum queue
// size"); a request past its timeout is failed (REJECT: UNAVAILABLE "Request timeout expired") or
// moved behind the requests that have not timed out (DELAY). Timeouts fire on time: an idle
// executor applies them when it forms a batch, and when a policy has a timeout a timer thread
// applies them while every instance is busy (so a REJECT answer never waits for an instance).
//
// Test hook (scheduler_test_hooks.h): with delay_count N > 0 the executors take nothing until N
// requests are queued, once (Triton's TRITONSERVER_DELAY_SCHEDULER); timeouts wait with them, as
// in Triton, whose batcher applies them only when it forms a batch.
//
// Cancellation (cancel_token.h): cancelled requests are taken off the queue when an executor
// looks at it (and when a full level is asked to take one more) and answered CANCELLED "Request
// was cancelled" (failure reason CANCELED), never executed.
//
// preserve_ordering: responses are delivered in the order requests left the queue (the arrival
// order, since such a model has one priority level), whichever instance finishes first.
//
// No inline execution (docs/adr/0006-dynamic-batching.md): every request goes through the queue,
// so a request arriving at an idle instance cannot take it for a batch of one while others are on
// their way; Enqueue ignores allow_inline.
//
// Thread-safety: Enqueue may be called from any thread; Stop once, by the owner.
// Locks: mu_ (queue, stopping_, ordering sequence) is a leaf held only for queue bookkeeping and
// FormBatch. ordered_ (OrderedDelivery) has its own leaf lock, held only for its bookkeeping:
// callbacks delivered in order run without any lock, so they may enqueue (take mu_).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "core/model/model_info.h"
#include "core/scheduler/batch_former.h"
#include "core/scheduler/executor_threads.h"
#include "core/scheduler/ordered_delivery.h"
#include "core/scheduler/scheduler.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

struct QueuePolicy {
  bool delay_on_timeout = false;  // timeout_action DELAY (else REJECT)
  uint64_t default_timeout_us = 0;
  bool allow_timeout_override = false;
  uint64_t max_queue_size = 0;  // 0: unbounded
};

struct DynamicBatchingOptions {
  int64_t max_batch_size = 1;
  std::vector<int64_t> preferred_batch_sizes;
  uint64_t max_queue_delay_us = 0;
  bool preserve_ordering = false;
  uint64_t priority_levels = 1;         // >= 1 (a config's 0 means one level)
  uint64_t default_priority_level = 1;  // in [1, priority_levels]
  QueuePolicy default_policy;           // for levels without their own
  std::map<uint64_t, QueuePolicy> level_policies;
  size_t delay_count = 0;  // test hook: hold every request until this many are queued (once)

  const QueuePolicy& PolicyFor(uint64_t level) const;
  // True when some level's policy can give a request a deadline.
  bool HasTimeouts() const;

  // From a validated configuration with dynamic_batching.
  static DynamicBatchingOptions FromConfig(const inference::ModelConfig& config);
};

class DynamicBatchScheduler final : public Scheduler {
 public:
  // Takes the instances; `model` and `stats` must outlive the scheduler.
  DynamicBatchScheduler(const ModelInfo* model, ModelStats* stats, DynamicBatchingOptions options,
                        std::vector<std::unique_ptr<backend::ModelInstance>>&& instances);
  ~DynamicBatchScheduler() override;

  void Enqueue(SchedulerJob&& job, bool allow_inline) override EXCLUDES(mu_);
  void Stop() override EXCLUDES(mu_);
  bool IsExecutorThread() const override;

 private:
  struct Entry {
    SchedulerJob job;
    std::string shape_key;
    uint64_t deadline_ns = 0;
  };
  struct Level {
    const QueuePolicy* policy = nullptr;
    std::deque<Entry> live;     // arrival order
    std::deque<Entry> delayed;  // moved behind by a DELAY timeout, in that order
  };
  using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

  void ExecutorLoop(size_t index) EXCLUDES(mu_);
  // Applies the queue timeouts while every executor may be busy (started with HasTimeouts()).
  void TimeoutLoop() EXCLUDES(mu_);
  // With mu_ held: true while the delay_count test hook holds the queue.
  bool HeldLocked() REQUIRES(mu_);
  // With mu_ held: every queued request as FormBatch sees it, and its entry.
  void CollectLocked(std::vector<QueuedItem>* items, std::vector<Entry*>* entries) REQUIRES(mu_);
  // With mu_ held: moves `d`'s batch and rejected jobs out of the queue and the delayed ones
  // behind the others (`entries` from CollectLocked).
  void ApplyLocked(const BatchDecision& d, const std::vector<Entry*>& entries,
                   std::vector<SchedulerJob>* batch, std::vector<SchedulerJob>* rejected)
      REQUIRES(mu_);
  // With mu_ held: applies FormBatch's decision, moving the batch and the rejected jobs out.
  BatchDecision TakeBatch(uint64_t now_ns, std::vector<SchedulerJob>* batch,
                          std::vector<SchedulerJob>* rejected) REQUIRES(mu_);
  // With mu_ held: moves every cancelled request out of the queue into *cancelled.
  void TakeCancelledLocked(std::vector<SchedulerJob>* cancelled) REQUIRES(mu_);
  void AnswerCancelled(std::vector<SchedulerJob>& cancelled) EXCLUDES(mu_);
  void RunBatch(size_t index, std::vector<SchedulerJob>& jobs, uint64_t first_seq) EXCLUDES(mu_);
  // Decoupled models: one sender per request (decoupled_batch_runner.h).
  void RunDecoupledBatch(size_t index, std::vector<SchedulerJob>& jobs,
                         std::vector<std::unique_ptr<InferenceRequest>> requests,
                         const std::vector<int64_t>& sizes, uint64_t first_seq) EXCLUDES(mu_);
  void Reject(SchedulerJob& job, const Status& status) EXCLUDES(mu_);

  const ModelInfo* model_;
  ModelStats* stats_;
  const DynamicBatchingOptions options_;
  BatcherPolicy policy_;
  std::vector<std::unique_ptr<backend::ModelInstance>> instances_;
  ExecutorThreads threads_;
  std::thread timeout_thread_;  // only when options_.HasTimeouts()

  Mutex mu_;
  std::condition_variable cv_;
  std::condition_variable timeout_cv_;  // the timer thread's; notified for an earlier deadline
  uint64_t timeout_wake_ns_ GUARDED_BY(mu_) = 0;  // when the timer wakes next (0: on notify)
  size_t delay_remaining_ GUARDED_BY(mu_) = 0;    // the delay_count hook, 0 once released
  // Levels are created on first use and kept (a config may declare billions).
  std::map<uint64_t, Level> levels_ GUARDED_BY(mu_);
  size_t queued_ GUARDED_BY(mu_) = 0;  // requests in levels_
  bool stopping_ GUARDED_BY(mu_) = false;
  uint64_t next_seq_ GUARDED_BY(mu_) = 0;  // order in which requests left the queue

  OrderedDelivery ordered_;  // preserve_ordering
};

}  // namespace nereid
