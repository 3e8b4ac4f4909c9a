#include "core/scheduler/default_scheduler.h"

#include <algorithm>
#include <optional>

#include "common/completion_batch.h"
#include "common/inline_caller.h"
#include "common/usable_cpus.h"
#include "core/model/instance_runner.h"

namespace nereid {
namespace {

// The execution's compute time as the statistics record it (a failed one until `end`); 0 when it
// never started.
uint64_t ComputeNs(const ExecutionTimes& times, uint64_t end) {
  return times.compute_start != 0 && end > times.compute_start ? end - times.compute_start : 0;
}

}  // namespace

bool MayDrainMore(const InlineDrainBudget& budget, int jobs, uint64_t compute_ns,
                  bool others_wait) {
  if (others_wait) {
    return jobs < std::min(budget.jobs, budget.jobs_when_others_wait) &&
           compute_ns < std::min(budget.compute_ns, budget.compute_ns_when_others_wait);
  }
  return jobs < budget.jobs && compute_ns < budget.compute_ns;
}

bool PastSharedDrainBudget(const InlineDrainBudget& budget, int jobs, uint64_t compute_ns) {
  return !MayDrainMore(budget, jobs, compute_ns, /*others_wait=*/true);
}

DefaultScheduler::DefaultScheduler(const ModelInfo* model, ModelStats* stats,
                                   std::vector<std::unique_ptr<backend::ModelInstance>>&& instances,
                                   InlineDrainBudget drain)
    : model_(model),
      stats_(stats),
      drain_(drain),
      ask_caller_((drain.cpus > 0 ? drain.cpus : UsableCpus()) > 1),
      instances_(std::move(instances)),
      busy_(instances_.size(), 0) {}

DefaultScheduler::~DefaultScheduler() { Stop(); }

void DefaultScheduler::Enqueue(SchedulerJob&& job, bool allow_inline) {
  UniqueLock lock(mu_);
  if (stopping_) {
    lock.Unlock();
    stats_->RecordFailure(FailureReason::kRejected, job.request_start_ns, NowNs());
    job.done(Unavailable("model '" + model_->name + "' is unloading"));
    return;
  }
  if (allow_inline) {
    for (size_t i = 0; i < busy_.size(); ++i) {
      if (busy_[i]) continue;
      busy_[i] = 1;
      int own = 0;  // the caller's job, when it joins the queue: drained on top of the budget
      if (queue_.empty()) {
        lock.Unlock();
        Run(i, job);
        job = SchedulerJob();  // release the request before taking the lock again
        lock.Lock();
      } else {
        // Jobs wait although this instance is idle: its executor was woken but has not run yet
        // (it shares the CPU with the I/O threads). This thread, already running, takes them
        // from the head instead, its own job last, so the order stays first come, first served.
        job.queue_start_ns = NowNs();
        queue_.push_back(std::move(job));
        stats_->AddPending(1);
        own = 1;
      }
      // Jobs that queued meanwhile (other callers found this instance busy) run here while the
      // budget allows, instead of waiting for an executor that shares the CPU with the I/O
      // threads: that wait was the p99 at 80 % of peak (bench/README.md, "tail").
      int drained = 0;
      uint64_t compute_ns = 0;
      // The drained jobs' replies belong to other connections: the frontend hands them to its I/O
      // threads together when the drain ends (one wake-up, not one per reply, and no I/O thread
      // woken to preempt this one mid-drain on a shared CPU). Closed with mu_ released.
      std::optional<CompletionBatch> replies;
      if (!queue_.empty()) replies.emplace();
      bool asked = false;  // whether the caller's own other work waits: asked once, when needed
      while (!queue_.empty()) {
        if (drained >= own) {
          const int jobs = drained - own;
          if (!MayDrainMore(drain_, jobs, compute_ns)) break;
          if (ask_caller_ && !asked && PastSharedDrainBudget(drain_, jobs, compute_ns)) {
            // Past the shared part only while nothing of the caller's own waits (ADR 0003's
            // third addendum); its answer may cost a system call, so mu_ is released.
            lock.Unlock();
            const bool others_wait = InlineCallerOthersWaiting();
            lock.Lock();
            asked = true;
            if (others_wait || queue_.empty()) break;
          }
        }
        SchedulerJob next = PopQueued();
        lock.Unlock();
        compute_ns += RunQueued(i, next);
        next = SchedulerJob();
        lock.Lock();
        ++drained;
      }
      busy_[i] = 0;
      const bool waiting = !queue_.empty();
      lock.Unlock();
      if (waiting) cv_.notify_all();  // what is left waits for this instance's executor
      replies.reset();
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
  // With every instance busy, waking the executors would only have them find their instance busy
  // and wait again (a futex wake and wait per request at c=16, measured): whoever frees an
  // instance takes the queue next (an executor loops before it waits; an inline run notifies).
  const bool idle_instance = std::find(busy_.begin(), busy_.end(), 0) != busy_.end();
  lock.Unlock();
  // Every executor re-checks its own instance; with inline runs a plain notify_one could wake
  // the executor of a busy instance and leave the job waiting.
  if (idle_instance) cv_.notify_all();
}

uint64_t DefaultScheduler::Run(size_t index, SchedulerJob& job) {
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
    return ComputeNs(times, executed.ok() ? times.compute_end : NowNs());
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
  return ComputeNs(times, end);
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
    SchedulerJob job = PopQueued();
    busy_[index] = 1;
    lock.Unlock();
    RunQueued(index, job);
    job = SchedulerJob();  // release the request before taking the lock again
    lock.Lock();
    busy_[index] = 0;
  }
}

SchedulerJob DefaultScheduler::PopQueued() {
  SchedulerJob job = std::move(queue_.front());
  queue_.pop_front();
  stats_->AddPending(-1);
  return job;
}

uint64_t DefaultScheduler::RunQueued(size_t index, SchedulerJob& job) {
  if (job.request->IsCancelled()) {  // the client gave up while it waited: do not run it
    stats_->RecordFailure(FailureReason::kCanceled, job.request_start_ns, NowNs());
    job.done(job.request->CancelledStatus());
    return 0;
  }
  return Run(index, job);
}

}  // namespace nereid
