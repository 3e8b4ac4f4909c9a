#include "core/scheduler/dynamic_batch_scheduler.h"

#include <algorithm>
#include <chrono>

#include "common/completion_batch.h"
#include "common/logging.h"
#include "common/saturating_time.h"
#include "common/thread_name.h"
#include "core/model/instance_runner.h"
#include "core/request/parameters.h"
#include "core/scheduler/batch_runner.h"
#include "core/scheduler/decoupled_batch_runner.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

QueuePolicy FromProto(const inference::ModelQueuePolicy& p) {
  QueuePolicy q;
  q.delay_on_timeout = p.timeout_action() == inference::ModelQueuePolicy::DELAY;
  q.default_timeout_us = p.default_timeout_microseconds();
  q.allow_timeout_override = p.allow_timeout_override();
  q.max_queue_size = p.max_queue_size();
  return q;
}

}  // namespace

DynamicBatchingOptions DynamicBatchingOptions::FromConfig(const inference::ModelConfig& config) {
  const auto& db = config.dynamic_batching();
  DynamicBatchingOptions o;
  o.max_batch_size = std::max(1, config.max_batch_size());
  o.preferred_batch_sizes.assign(db.preferred_batch_size().begin(),
                                 db.preferred_batch_size().end());
  o.max_queue_delay_us = db.max_queue_delay_microseconds();
  o.preserve_ordering = db.preserve_ordering();
  o.priority_levels = std::max<uint64_t>(1, db.priority_levels());
  o.default_priority_level = db.priority_levels() == 0 ? 1 : db.default_priority_level();
  o.default_policy = FromProto(db.default_queue_policy());
  for (const auto& [level, policy] : db.priority_queue_policy()) {
    if (level >= 1 && level <= o.priority_levels) o.level_policies[level] = FromProto(policy);
  }
  return o;
}

bool DynamicBatchingOptions::HasTimeouts() const {
  // A request's own timeout only lowers a configured one, so without one nothing expires.
  if (default_policy.default_timeout_us != 0) return true;
  for (const auto& [level, policy] : level_policies) {
    if (policy.default_timeout_us != 0) return true;
  }
  return false;
}

const QueuePolicy& DynamicBatchingOptions::PolicyFor(uint64_t level) const {
  auto it = level_policies.find(level);
  return it == level_policies.end() ? default_policy : it->second;
}

DynamicBatchScheduler::DynamicBatchScheduler(
    const ModelInfo* model, ModelStats* stats, DynamicBatchingOptions options,
    std::vector<std::unique_ptr<backend::ModelInstance>>&& instances)
    : model_(model), stats_(stats), options_(std::move(options)), instances_(std::move(instances)) {
  policy_.max_batch_size = options_.max_batch_size;
  policy_.preferred_batch_sizes = options_.preferred_batch_sizes;
  policy_.max_queue_delay_ns = MicrosToNanos(options_.max_queue_delay_us);
  {
    MutexLock lock(mu_);
    delay_remaining_ = options_.delay_count;
  }
  if (options_.delay_count != 0) {
    LOG_VERBOSE(1, "Delaying batcher thread for {} until {} queued requests...", model_->name,
                options_.delay_count);
  }
  threads_.Start(instances_.size(), [this](size_t i) { ExecutorLoop(i); });
  if (options_.HasTimeouts())
    timeout_thread_ = StartNamedThread("batch-timeout", [this] { TimeoutLoop(); });
}

DynamicBatchScheduler::~DynamicBatchScheduler() { Stop(); }

void DynamicBatchScheduler::Reject(SchedulerJob& job, const Status& status) {
  stats_->RecordFailure(FailureReason::kRejected, job.request_start_ns, NowNs());
  job.done(status);
}

void DynamicBatchScheduler::TakeCancelledLocked(std::vector<SchedulerJob>* cancelled) {
  const size_t before = cancelled->size();
  auto is_cancelled = [](const Entry& e) { return e.job.request->IsCancelled(); };
  for (auto& [l, level] : levels_) {
    for (std::deque<Entry>* dq : {&level.live, &level.delayed}) {
      if (std::none_of(dq->begin(), dq->end(), is_cancelled)) continue;
      std::deque<Entry> kept;
      for (Entry& e : *dq) {
        if (is_cancelled(e)) {
          cancelled->push_back(std::move(e.job));
        } else {
          kept.push_back(std::move(e));
        }
      }
      dq->swap(kept);
    }
  }
  const size_t n = cancelled->size() - before;
  queued_ -= n;
  stats_->AddPending(-static_cast<int64_t>(n));
}

void DynamicBatchScheduler::AnswerCancelled(std::vector<SchedulerJob>& cancelled) {
  if (cancelled.empty()) return;
  LOG_VERBOSE(1, "model '{}': dropped {} cancelled request(s)", model_->name, cancelled.size());
  for (SchedulerJob& job : cancelled) {
    stats_->RecordFailure(FailureReason::kCanceled, job.request_start_ns, NowNs());
    job.done(job.request->CancelledStatus());
  }
  cancelled.clear();
}

void DynamicBatchScheduler::Enqueue(SchedulerJob&& job, bool /*allow_inline*/) {
  job.queue_start_ns = NowNs();
  // Priority 0 or beyond the configured levels means the default level (Triton's SetPriority).
  const uint64_t priority = GetUint(job.request->parameters, "priority").value_or(0);
  const uint64_t level = priority == 0 || priority > options_.priority_levels
                             ? options_.default_priority_level
                             : priority;
  const QueuePolicy& policy = options_.PolicyFor(level);
  uint64_t timeout_us = policy.default_timeout_us;
  if (policy.allow_timeout_override) {
    // A request's timeout may only lower the configured one (Triton's PolicyQueue::Enqueue).
    const uint64_t requested = GetUint(job.request->parameters, "timeout").value_or(0);
    if (requested != 0 && requested < timeout_us) timeout_us = requested;
  }
  Entry entry;
  entry.deadline_ns =
      timeout_us == 0 ? 0 : SaturatingAdd(job.queue_start_ns, MicrosToNanos(timeout_us));
  entry.shape_key = BatchShapeKey(*job.request, model_);

  UniqueLock lock(mu_);
  if (stopping_) {
    lock.Unlock();
    Reject(job, Unavailable("model '" + model_->name + "' is unloading"));
    return;
  }
  Level& q = levels_[level];
  q.policy = &policy;
  std::vector<SchedulerJob> cancelled;
  if (policy.max_queue_size != 0 && q.live.size() + q.delayed.size() >= policy.max_queue_size) {
    TakeCancelledLocked(&cancelled);  // abandoned requests make room first
    if (q.live.size() + q.delayed.size() >= policy.max_queue_size) {
      lock.Unlock();
      AnswerCancelled(cancelled);
      Reject(job, Unavailable("Exceeds maximum queue size"));
      return;
    }
  }
  // Logged once queued, outside the lock (the id is copied only when verbose logging is on).
  const std::string id = logging::VerboseLevel() >= 1 ? job.request->id : std::string();
  const uint64_t deadline = entry.deadline_ns;
  const bool earlier_deadline =
      deadline != 0 && (timeout_wake_ns_ == 0 || deadline < timeout_wake_ns_);
  entry.job = std::move(job);
  q.live.push_back(std::move(entry));
  ++queued_;
  stats_->AddPending(1);
  lock.Unlock();
  if (earlier_deadline) timeout_cv_.notify_one();
  AnswerCancelled(cancelled);
  LOG_VERBOSE(1, "model '{}': request '{}' queued at priority level {}", model_->name, id, level);
  // Every idle executor re-forms; one of them takes the batch.
  cv_.notify_all();
}

void DynamicBatchScheduler::CollectLocked(std::vector<QueuedItem>* items,
                                          std::vector<Entry*>* entries) {
  items->reserve(queued_);
  entries->reserve(queued_);
  for (auto& [l, level] : levels_) {
    for (int pass = 0; pass < 2; ++pass) {
      auto& dq = pass == 0 ? level.live : level.delayed;
      for (Entry& e : dq) {
        items->push_back({l, pass == 1, std::max<int64_t>(1, e.job.batch_size), e.shape_key,
                          e.job.queue_start_ns, e.deadline_ns, level.policy->delay_on_timeout});
        entries->push_back(&e);
      }
    }
  }
}

void DynamicBatchScheduler::ApplyLocked(const BatchDecision& d, const std::vector<Entry*>& entries,
                                        std::vector<SchedulerJob>* batch,
                                        std::vector<SchedulerJob>* rejected) {
  enum : char { kStay, kGone, kDelay };
  std::vector<char> mark(entries.size(), kStay);
  for (size_t i : d.rejected) {
    rejected->push_back(std::move(entries[i]->job));
    mark[i] = kGone;
  }
  for (size_t i : d.batch) {
    batch->push_back(std::move(entries[i]->job));
    mark[i] = kGone;
  }
  for (size_t i : d.delayed) mark[i] = kDelay;
  const size_t taken = d.rejected.size() + d.batch.size();
  queued_ -= taken;
  stats_->AddPending(-static_cast<int64_t>(taken));
  if (taken == entries.size()) {
    // The whole queue left (a busy batcher's usual turn): nothing to rebuild, and the deques keep
    // their blocks for the next arrivals.
    for (auto& [l, level] : levels_) {
      level.live.clear();
      level.delayed.clear();
    }
    return;
  }
  // Rebuild the levels from what stays, newly delayed requests last in their level.
  size_t flat = 0;
  for (auto& [l, level] : levels_) {
    std::deque<Entry> live, delayed, newly;
    for (int pass = 0; pass < 2; ++pass) {
      auto& dq = pass == 0 ? level.live : level.delayed;
      for (Entry& e : dq) {
        const char m = mark[flat++];
        if (m == kStay) (pass == 0 ? live : delayed).push_back(std::move(e));
        if (m == kDelay) newly.push_back(std::move(e));
      }
    }
    for (Entry& e : newly) delayed.push_back(std::move(e));
    level.live = std::move(live);
    level.delayed = std::move(delayed);
  }
}

BatchDecision DynamicBatchScheduler::TakeBatch(uint64_t now_ns, std::vector<SchedulerJob>* batch,
                                               std::vector<SchedulerJob>* rejected) {
  std::vector<QueuedItem> items;
  std::vector<Entry*> entries;
  CollectLocked(&items, &entries);
  BatchDecision d = FormBatch(items, policy_, now_ns, stopping_);
  if (d.batch.empty() && d.rejected.empty() && d.delayed.empty()) return d;
  ApplyLocked(d, entries, batch, rejected);
  return d;
}

bool DynamicBatchScheduler::HeldLocked() {
  if (delay_remaining_ == 0) return false;
  // Shutting down runs what is queued (Stop's contract), so the hook lets go.
  if (queued_ < delay_remaining_ && !stopping_) return true;
  delay_remaining_ = 0;
  return false;
}

void DynamicBatchScheduler::TimeoutLoop() {
  std::vector<SchedulerJob> none;
  std::vector<SchedulerJob> rejected;
  UniqueLock lock(mu_);
  while (!stopping_) {
    uint64_t wake = 0;
    if (queued_ != 0 && !HeldLocked()) {
      std::vector<QueuedItem> items;
      std::vector<Entry*> entries;
      CollectLocked(&items, &entries);
      const BatchDecision d = ExpireTimeouts(items, NowNs());
      if (!d.rejected.empty() || !d.delayed.empty()) ApplyLocked(d, entries, &none, &rejected);
      wake = d.wake_at_ns;
    }
    if (!rejected.empty()) {
      lock.Unlock();
      LOG_VERBOSE(1, "model '{}': {} queued request(s) timed out", model_->name, rejected.size());
      for (SchedulerJob& job : rejected) Reject(job, Unavailable("Request timeout expired"));
      rejected.clear();  // releases the requests before taking the lock again
      lock.Lock();
      continue;
    }
    timeout_wake_ns_ = wake;
    if (wake == 0) {
      lock.Wait(timeout_cv_);
    } else {
      lock.WaitUntil(timeout_cv_, SteadyTimePoint(wake));
    }
  }
}

void DynamicBatchScheduler::ExecutorLoop(size_t index) {
  std::vector<SchedulerJob> batch;
  std::vector<SchedulerJob> rejected;
  std::vector<SchedulerJob> cancelled;
  UniqueLock lock(mu_);
  for (;;) {
    if (queued_ == 0) {
      if (stopping_) return;
      lock.Wait(cv_);
      continue;
    }
    if (HeldLocked()) {  // the delay_count test hook: every arrival wakes us to count again
      lock.Wait(cv_);
      continue;
    }
    TakeCancelledLocked(&cancelled);
    if (!cancelled.empty()) {
      lock.Unlock();
      AnswerCancelled(cancelled);
      lock.Lock();
      continue;
    }
    const BatchDecision d = TakeBatch(NowNs(), &batch, &rejected);
    if (batch.empty() && rejected.empty()) {
      if (d.delayed.empty()) {
        if (d.wake_at_ns != 0) {
          lock.WaitUntil(cv_, SteadyTimePoint(d.wake_at_ns));
        } else {
          lock.Wait(cv_);
        }
      }
      continue;
    }
    const uint64_t first_seq = next_seq_;
    next_seq_ += batch.size();
    lock.Unlock();
    if (!batch.empty()) {
      LOG_VERBOSE(1, "model '{}': executing {} request(s) as a batch of {}", model_->name,
                  batch.size(), d.batch_size);
    }
    for (SchedulerJob& job : rejected) Reject(job, Unavailable("Request timeout expired"));
    rejected.clear();
    if (!batch.empty()) RunBatch(index, batch, first_seq);
    batch.clear();  // releases the requests before taking the lock again
    lock.Lock();
  }
}

void DynamicBatchScheduler::RunBatch(size_t index, std::vector<SchedulerJob>& jobs,
                                     uint64_t first_seq) {
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  std::vector<int64_t> sizes;
  requests.reserve(jobs.size());
  sizes.reserve(jobs.size());
  int64_t total = 0;
  for (SchedulerJob& job : jobs) {
    requests.push_back(std::move(job.request));
    sizes.push_back(std::max<int64_t>(1, job.batch_size));
    total += sizes.back();
  }
  ExecutionTimes times;
  if (model_->decoupled) {
    RunDecoupledBatch(index, jobs, std::move(requests), sizes, first_seq);
    return;
  }
  bool executed = false;
  auto results = RunBatchOnInstance(*instances_[index], *model_, std::move(requests), sizes, &times,
                                    &executed);
  const uint64_t end = NowNs();
  if (executed) stats_->RecordExecution(total, times);
  // Lets the frontends hand the replies to their I/O threads together, not one wake-up each.
  CompletionBatch replies;
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (results[i].ok()) {
      // One response per request: no response_stats, as Triton (docs/statistics_and_metrics.md).
      stats_->RecordSuccess(sizes[i], jobs[i].request_start_ns, jobs[i].queue_start_ns, times, end);
      (*results[i])->compute = DurationsOf(times);
    } else {
      stats_->RecordFailure(FailureReason::kBackend, jobs[i].request_start_ns, end);
    }
    if (options_.preserve_ordering) {
      ordered_.Deliver(first_seq + i, jobs[i].done, std::move(results[i]));
    } else {
      jobs[i].done(std::move(results[i]));
    }
  }
}

void DynamicBatchScheduler::RunDecoupledBatch(
    size_t index, std::vector<SchedulerJob>& jobs,
    std::vector<std::unique_ptr<InferenceRequest>> requests, const std::vector<int64_t>& sizes,
    uint64_t first_seq) {
  std::vector<InferCallback> dones;
  dones.reserve(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (!options_.preserve_ordering) {
      dones.push_back(std::move(jobs[i].done));
      continue;
    }
    // Responses before FINAL flow at once; FINALs keep the order the requests arrived in.
    dones.push_back([this, seq = first_seq + i, done = std::move(jobs[i].done)](
                        StatusOr<std::unique_ptr<InferenceResponse>> result) mutable {
      ordered_.Deliver(seq, done, std::move(result));
    });
  }
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  ExecutionTimes times;
  const Status executed = RunDecoupledBatchOnInstance(
      *instances_[index], *model_, std::move(requests), sizes, std::move(dones), stats_, &times);
  const uint64_t end = NowNs();
  if (executed.ok()) stats_->RecordExecution(total, times);
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (executed.ok()) {
      stats_->RecordSuccess(sizes[i], jobs[i].request_start_ns, jobs[i].queue_start_ns, times,
                            times.compute_end);
    } else {
      stats_->RecordFailure(FailureReason::kBackend, jobs[i].request_start_ns, end);
    }
  }
}

void DynamicBatchScheduler::Stop() {
  {
    MutexLock lock(mu_);
    if (stopping_ && threads_.empty()) return;
    stopping_ = true;
  }
  cv_.notify_all();
  timeout_cv_.notify_all();
  if (timeout_thread_.joinable()) timeout_thread_.join();
  threads_.Join();
  instances_.clear();
}

bool DynamicBatchScheduler::IsExecutorThread() const {
  const auto self = std::this_thread::get_id();
  if (timeout_thread_.get_id() == self) return true;  // its Reject runs reply callbacks
  return threads_.Contains(self);
}

}  // namespace nereid
