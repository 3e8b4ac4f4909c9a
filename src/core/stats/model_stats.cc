#include "core/stats/model_stats.h"

#include <algorithm>
#include <chrono>
#include <type_traits>

namespace nereid {
namespace {

uint64_t Span(uint64_t from, uint64_t to) { return to > from ? to - from : 0; }

uint64_t WallClockMs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

// Adds one response to `r` (ResponseStat, or ModelStats' atomic twin of it) as `outcome` says.
template <typename Stat>
void AddTo(Stat& r, ResponseOutcome outcome, uint64_t infer_ns, uint64_t output_ns) {
  auto add = [](auto& d, uint64_t ns) {
    if constexpr (std::is_same_v<std::decay_t<decltype(d)>, DurationStat>) {
      d.count++;
      d.ns += ns;
    } else {
      d.Add(ns);
    }
  };
  switch (outcome) {
    case ResponseOutcome::kSuccess:
    case ResponseOutcome::kFail:
      add(r.compute_infer, infer_ns);
      add(r.compute_output, output_ns);
      add(outcome == ResponseOutcome::kSuccess ? r.success : r.fail, infer_ns + output_ns);
      break;
    case ResponseOutcome::kEmpty:
      add(r.compute_infer, infer_ns);
      add(r.empty_response, infer_ns);
      break;
    case ResponseOutcome::kCancel:
      add(r.cancel, infer_ns + output_ns);
      break;
  }
}

}  // namespace

uint64_t NowNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

const char* FailureReasonLabel(FailureReason reason) {
  switch (reason) {
    case FailureReason::kRejected:
      return "REJECTED";
    case FailureReason::kCanceled:
      return "CANCELED";
    case FailureReason::kBackend:
      return "BACKEND";
    case FailureReason::kOther:
      break;
  }
  return "OTHER";
}

ModelStats::ModelStats(int64_t max_batch_size)
    : batches_(std::make_unique<AtomicBatch[]>(
          static_cast<size_t>(std::max<int64_t>(1, max_batch_size)))),
      batch_slots_(static_cast<size_t>(std::max<int64_t>(1, max_batch_size))) {}

void ModelStats::RecordSuccess(int64_t batch_size, uint64_t request_start, uint64_t queue_start,
                               const ExecutionTimes& exec, uint64_t request_end) {
  RequestLatencies l;
  l.request_ns = Span(request_start, request_end);
  l.queue_ns = Span(queue_start, exec.compute_start);
  l.compute_input_ns = Span(exec.compute_start, exec.input_end);
  l.compute_infer_ns = Span(exec.input_end, exec.output_start);
  l.compute_output_ns = Span(exec.output_start, exec.compute_end);
  inference_count_.fetch_add(static_cast<uint64_t>(std::max<int64_t>(1, batch_size)),
                             std::memory_order_relaxed);
  success_.Add(l.request_ns);
  queue_ns_.fetch_add(l.queue_ns, std::memory_order_relaxed);
  queue_histogram_.Record(l.queue_ns);
  compute_input_ns_.fetch_add(l.compute_input_ns, std::memory_order_relaxed);
  compute_infer_ns_.fetch_add(l.compute_infer_ns, std::memory_order_relaxed);
  compute_output_ns_.fetch_add(l.compute_output_ns, std::memory_order_relaxed);
  if (observer_) observer_->Observe(l);
}

void ModelStats::RecordCacheHit(uint64_t request_start, uint64_t queue_start, uint64_t lookup_start,
                                uint64_t lookup_end) {
  success_.Add(Span(request_start, lookup_end));
  const uint64_t queue_ns = Span(queue_start, lookup_start);
  queue_ns_.fetch_add(queue_ns, std::memory_order_relaxed);
  queue_histogram_.Record(queue_ns);
  cache_hit_.Add(Span(lookup_start, lookup_end));
}

void ModelStats::RecordCacheMiss(uint64_t ns) {
  cache_miss_.Add(ns);
  success_.ns.fetch_add(ns, std::memory_order_relaxed);
}

void ModelStats::RecordFailure(FailureReason reason, uint64_t request_start, uint64_t request_end) {
  fail_.Add(Span(request_start, request_end));
  if (observer_) observer_->ObserveFailure(Span(request_start, request_end));
  fail_by_reason_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

void ModelStats::RecordExecution(int64_t batch_size, const ExecutionTimes& exec) {
  execution_count_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now_ms = WallClockMs();
  uint64_t last = last_inference_ms_.load(std::memory_order_relaxed);
  while (last < now_ms &&
         !last_inference_ms_.compare_exchange_weak(last, now_ms, std::memory_order_relaxed)) {
  }
  const size_t size = static_cast<size_t>(std::max<int64_t>(1, batch_size));
  if (size > batch_slots_) return;  // cannot happen for a validated request; never index past
  AtomicBatch& b = batches_[size - 1];
  b.count.fetch_add(1, std::memory_order_relaxed);
  b.input_ns.fetch_add(Span(exec.compute_start, exec.input_end), std::memory_order_relaxed);
  b.infer_ns.fetch_add(Span(exec.input_end, exec.output_start), std::memory_order_relaxed);
  b.output_ns.fetch_add(Span(exec.output_start, exec.compute_end), std::memory_order_relaxed);
}

void ModelStats::RecordResponse(uint64_t index, ResponseOutcome outcome, uint64_t compute_infer_ns,
                                uint64_t compute_output_ns) {
  if (index == 0) {
    AddTo(first_response_, outcome, compute_infer_ns, compute_output_ns);
    return;
  }
  MutexLock lock(mu_);
  AddTo(later_responses_[index], outcome, compute_infer_ns, compute_output_ns);
}

void ModelStats::SetMemoryUsage(std::vector<MemoryUsage> usage) {
  MutexLock lock(mu_);
  memory_usage_ = std::move(usage);
}

ModelStatsSnapshot ModelStats::Snapshot() const {
  ModelStatsSnapshot s;
  s.load_duration_ns = load_duration_ns_.load(std::memory_order_relaxed);
  s.last_inference_ms = last_inference_ms_.load(std::memory_order_relaxed);
  s.inference_count = inference_count_.load(std::memory_order_relaxed);
  s.execution_count = execution_count_.load(std::memory_order_relaxed);
  s.pending_requests = std::max<int64_t>(0, pending_.load(std::memory_order_relaxed));
  s.success = success_.Load();
  s.fail = fail_.Load();
  // Counts equal the success count by construction (a snapshot racing a RecordSuccess may see
  // a duration before or after its count; each value is exact on its own).
  // Cache hits count in queue but in no compute phase (Triton's tritonserver.cc).
  s.cache_hit = cache_hit_.Load();
  s.cache_miss = cache_miss_.Load();
  s.cache_enabled = cache_enabled_;
  const uint64_t n = s.success.count;
  const uint64_t computed = n - std::min(n, s.cache_hit.count);
  s.queue = {n, queue_ns_.load(std::memory_order_relaxed)};
  s.queue_histogram = queue_histogram_.Load();
  s.compute_input = {computed, compute_input_ns_.load(std::memory_order_relaxed)};
  s.compute_infer = {computed, compute_infer_ns_.load(std::memory_order_relaxed)};
  s.compute_output = {computed, compute_output_ns_.load(std::memory_order_relaxed)};
  for (size_t i = 0; i < fail_by_reason_.size(); ++i) {
    s.fail_by_reason[i] = fail_by_reason_[i].load(std::memory_order_relaxed);
  }
  for (size_t i = 0; i < batch_slots_; ++i) {
    const AtomicBatch& b = batches_[i];
    const uint64_t count = b.count.load(std::memory_order_relaxed);
    if (count == 0) continue;
    BatchStat stat;
    stat.batch_size = i + 1;
    stat.compute_input = {count, b.input_ns.load(std::memory_order_relaxed)};
    stat.compute_infer = {count, b.infer_ns.load(std::memory_order_relaxed)};
    stat.compute_output = {count, b.output_ns.load(std::memory_order_relaxed)};
    s.batch_stats.push_back(stat);
  }
  const DurationStat first_infer = first_response_.compute_infer.Load();
  const DurationStat first_cancel = first_response_.cancel.Load();
  if (first_infer.count > 0 || first_cancel.count > 0) {  // a cancel counts nothing else
    ResponseStat& r = s.response_stats["0"];
    r.compute_infer = first_infer;
    r.compute_output = first_response_.compute_output.Load();
    r.success = first_response_.success.Load();
    r.fail = first_response_.fail.Load();
    r.empty_response = first_response_.empty_response.Load();
    r.cancel = first_cancel;
  }
  MutexLock lock(mu_);
  for (const auto& [index, stat] : later_responses_) s.response_stats[std::to_string(index)] = stat;
  s.memory_usage = memory_usage_;
  return s;
}

}  // namespace nereid
