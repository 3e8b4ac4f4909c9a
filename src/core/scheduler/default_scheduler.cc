#include "core/scheduler/default_scheduler.h"

#include "core/model/instance_runner.h"

namespace nereid {

DefaultScheduler::DefaultScheduler(const ModelInfo* model, ModelStats* stats,
                                   std::vector<std::unique_ptr<backend::ModelInstance>>&& instances)
    : model_(model), stats_(stats), instances_(std::move(instances)), busy_(instances_.size(), 0) {}

DefaultScheduler::~DefaultScheduler() { Stop(); }

void DefaultScheduler::Enqueue(SchedulerJob&& job, bool allow_inline) {
  UniqueLock lock(mu_);
  if (stopping_) {
    lock.Unlock();
    stats_->RecordFailure(FailureReason::kRejected, job.request_start_ns, NowNs());
    job.done(Unavailable("model '" + model_->name + "' is unloading"));
    return;
  }
  if (allow_inline && queue_.empty()) {
    for (size_t i = 0; i < busy_.size(); ++i) {
      if (busy_[i]) continue;
      busy_[i] = 1;
      lock.Unlock();
      Run(i, job);
      lock.Lock();
      busy_[i] = 0;
      const bool waiting = !queue_.empty();
      lock.Unlock();
      if (waiting) cv_.notify_all();  // jobs queued meanwhile may wait for this instance
      return;
    }
  }
  job.queue_start_ns = NowNs();  // an inline run has none: it starts computing at once (Run)
  queue_.push_back(std::move(job));
  stats_->AddPending(1);
  if (!executors_started_) {
    // The first job that has to wait starts the executors: a model only ever run inline (or
    // never run) has none.
    executors_started_ = true;
    threads_.Start(instances_.size(), [this](size_t i) { ExecutorLoop(i); });
  }
  lock.Unlock();
  // Every executor re-checks its own instance; with inline runs a plain notify_one could wake
  // the executor of a busy instance and leave the job waiting.
  cv_.notify_all();
}

void DefaultScheduler::Run(size_t index, SchedulerJob& job) {
  ExecutionTimes times;
  if (model_->decoupled) {  // the responses go to job.done through the backend's sender
    const Status executed =
        RunDecoupledOnInstance(*instances_[index], *model_, std::move(job.request), job.batch_size,
                               stats_, std::move(job.done), &times);
    if (job.queue_start_ns == 0) job.queue_start_ns = times.compute_start;
    if (executed.ok()) {
      stats_->RecordExecution(job.batch_size, times);
      stats_->RecordSuccess(job.batch_size, job.request_start_ns, job.queue_start_ns, times,
                            times.compute_end);
    } else {
      stats_->RecordFailure(FailureReason::kBackend, job.request_start_ns, NowNs());
    }
    return;
  }
  auto result =
      RunOnInstance(*instances_[index], *model_, std::move(job.request), job.batch_size, &times);
  if (job.queue_start_ns == 0) job.queue_start_ns = times.compute_start;  // ran inline
  // On success the outputs were just collected: their end is the request's.
  const uint64_t end = result.ok() ? times.compute_end : NowNs();
  if (result.ok()) {
    // One response per request: no response statistics (see model_stats.h).
    stats_->RecordExecution(job.batch_size, times);
    stats_->RecordSuccess(job.batch_size, job.request_start_ns, job.queue_start_ns, times, end);
    (*result)->compute = DurationsOf(times);
  } else {
    stats_->RecordFailure(FailureReason::kBackend, job.request_start_ns, end);
  }
  job.done(std::move(result));
}

void DefaultScheduler::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  threads_.Join();
  instances_.clear();
}

bool DefaultScheduler::IsExecutorThread() const {
  return threads_.Contains(std::this_thread::get_id());
}

void DefaultScheduler::ExecutorLoop(size_t index) {
  UniqueLock lock(mu_);
  for (;;) {
    lock.Wait(cv_, [&]() REQUIRES(mu_) {
      return (stopping_ && queue_.empty()) || (!queue_.empty() && !busy_[index]);
    });
    if (queue_.empty()) return;  // stopping and drained
    SchedulerJob job = std::move(queue_.front());
    queue_.pop_front();
    stats_->AddPending(-1);
    if (job.request->IsCancelled()) {  // the client gave up while it waited: do not run it
      lock.Unlock();
      stats_->RecordFailure(FailureReason::kCanceled, job.request_start_ns, NowNs());
      job.done(job.request->CancelledStatus());
      job = SchedulerJob();
      lock.Lock();
      continue;
    }
    busy_[index] = 1;
    lock.Unlock();
    Run(index, job);
    job = SchedulerJob();  // release the request before taking the lock again
    lock.Lock();
    busy_[index] = 0;
  }
}

}  // namespace nereid
