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

class DefaultScheduler final : public Scheduler {
 public:
  // Takes the instances; `model` and `stats` must outlive the scheduler. Every job's outcome is
  // recorded in `stats` (success or failure, queue and compute times, the execution) before its
  // callback runs.
  DefaultScheduler(const ModelInfo* model, ModelStats* stats,
                   std::vector<std::unique_ptr<backend::ModelInstance>>&& instances);
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
  void Run(size_t index, SchedulerJob& job) EXCLUDES(mu_);

  const ModelInfo* model_;
  ModelStats* stats_;
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
