// DefaultScheduler: Triton's default scheduler. Requests run one at a time each, FIFO, on
// whichever instance is idle. One executor thread per instance pulls from a shared queue; they
// start with the first job queued (docs/threading.md), so a model whose requests all ran inline
// has no thread of its own.
//
// Inline execution: when the caller allows it, nothing is queued and an instance is idle, the job
// runs to completion on the calling thread (no thread hand-off in either direction, which is most
// of the latency of a small model). The instance is marked busy meanwhile so its executor thread
// leaves it alone. Callers bound how many of their threads may do this (see the HTTP frontend).
//
// Inline drain (issue 21 goal 6): jobs that queued while that thread held the instance (other
// callers found it busy) then run on that thread too, in order, within an InlineDrainBudget,
// before the instance is handed back; only what is left wakes the executor. Past a small part of
// the budget the drain goes on only if the thread's own other work is not waiting (an HTTP loop
// with another connection readable, common/inline_caller.h) or the process has one CPU. A caller
// allowed inline that finds jobs queued and an instance idle (its executor woken but not yet
// scheduled) queues its job and runs the queue from the head the same way, so the order stays first
// come, first served. On a shared CPU the executor would wait for its turn behind the I/O threads.
//
// Cancellation (cancel_token.h): a queued request whose token is cancelled when an executor takes
// it is answered CANCELLED "Request was cancelled" (failure reason CANCELED) instead of run.
//
// Thread-safety: Enqueue may be called from any thread. Stop is called once, by the owner.
// Lock order: mu_ is a leaf; no backend call, callback or allocation-heavy work happens under it.
#pragma once

#include <condition_variable>
#include <deque>
#include <memory>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/scheduler/executor_threads.h"
#include "core/scheduler/scheduler.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

// How much queued work a thread that runs inline may take on after its own job (see above).
struct InlineDrainBudget {
  int jobs = 128;  // queued jobs at most
  // The drain stops once the jobs it ran took this long to compute (their compute times, as the
  // statistics record them): a cheap model drains `jobs`, a slow one at most one job.
  uint64_t compute_ns = 200'000;
  // The budget while the thread's own other work waits (common/inline_caller.h: another
  // connection of an HTTP I/O loop with bytes readable): the drained jobs are other loops'
  // requests, and every one of them delays this loop's connections. Asked once, when a drain
  // would go past it.
  int jobs_when_others_wait = 8;
  uint64_t compute_ns_when_others_wait = 25'000;
  // The CPUs the process may run on (0: common/usable_cpus.h's count when the scheduler is
  // built). With one, the jobs a drain leaves would wait for the executor on that same CPU,
  // behind the loop they were meant to spare: no caller is asked and the full budget applies.
  int cpus = 0;
};

// Whether a drain that ran `jobs` queued jobs taking `compute_ns` may take one more, for a caller
// whose own other work waits (`others_wait`) or not.
bool MayDrainMore(const InlineDrainBudget& budget, int jobs, uint64_t compute_ns,
                  bool others_wait = false);
// Whether a drain that ran that much has used the part of the budget that holds whatever waits:
// past it, the caller is asked whether its own other work waits.
bool PastSharedDrainBudget(const InlineDrainBudget& budget, int jobs, uint64_t compute_ns);

class DefaultScheduler final : public Scheduler {
 public:
  // Takes the instances; `model` and `stats` must outlive the scheduler. Every job's outcome is
  // recorded in `stats` (success or failure, queue and compute times, the execution) before its
  // callback runs.
  DefaultScheduler(const ModelInfo* model, ModelStats* stats,
                   std::vector<std::unique_ptr<backend::ModelInstance>>&& instances,
                   InlineDrainBudget drain = {});
  ~DefaultScheduler() override;  // Stop()s if needed

  // Schedules `job`; with allow_inline it may run it on this thread before returning.
  void Enqueue(SchedulerJob&& job, bool allow_inline = false) override EXCLUDES(mu_);
  // Whether the executor threads have started (the first queued job starts them). For tests.
  bool executors_started() const { return !threads_.empty(); }
  // Runs every job already queued, then joins the executors and destroys the instances.
  // Must not be called from an executor thread (see IsExecutorThread).
  void Stop() override EXCLUDES(mu_);
  bool IsExecutorThread() const override;

 private:
  void ExecutorLoop(size_t index) EXCLUDES(mu_);
  SchedulerJob PopQueued() REQUIRES(mu_);  // the queue's head; the queue is not empty
  // Runs a job taken from the queue on instance `index` (marked busy), or answers it CANCELLED
  // when its client gave up while it waited. Returns its compute time (0 when not run).
  uint64_t RunQueued(size_t index, SchedulerJob& job) EXCLUDES(mu_);
  uint64_t Run(size_t index, SchedulerJob& job) EXCLUDES(mu_);  // returns the compute time

  const ModelInfo* model_;
  ModelStats* stats_;
  const InlineDrainBudget drain_;
  const bool ask_caller_;  // whether a drain past the shared part asks its caller (cpus > 1)
  std::vector<std::unique_ptr<backend::ModelInstance>> instances_;
  ExecutorThreads threads_;
  Mutex mu_;
  std::condition_variable cv_;
  std::deque<SchedulerJob> queue_ GUARDED_BY(mu_);
  std::vector<char> busy_ GUARDED_BY(mu_);  // per instance
  bool stopping_ GUARDED_BY(mu_) = false;
  bool executors_started_ GUARDED_BY(mu_) = false;
};

}  // namespace nereid
