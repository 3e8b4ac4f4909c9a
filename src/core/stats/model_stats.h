// ModelStats: the cumulative statistics of one model version (seed 004, the statistics extension),
// recorded on the request path and read by the statistics API and the metrics endpoint.
//
// Recording never takes a lock: every counter is a relaxed atomic, and batch statistics live in a
// fixed array indexed by batch size (sized from max_batch_size at load). Only the response
// statistics past the first response (decoupled models only) and the snapshot use a mutex. A
// snapshot taken while requests complete may mix counters of a request that is half recorded; each
// counter on its own is exact, and every counter is monotonic.
//
// Time: request timestamps are steady-clock nanoseconds (NowNs); last_inference is wall-clock
// milliseconds since the epoch, taken when a successful execution is recorded (as Triton's
// InferenceStatsAggregator::UpdateInferBatchStats does).
//
// Response statistics are recorded only by schedulers of decoupled models (Triton fills them only
// when a backend reports them through TRITONBACKEND_ModelInstanceReportResponseStatistics, which
// ONNX Runtime and the other one-response backends never call), so a request/response model
// reports an empty response_stats, as Triton does.
//
// Thread-safety: every method may be called from any thread concurrently.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "core/stats/log2_histogram.h"

namespace nereid {

// Steady-clock nanoseconds, the time base of every RequestTimes/ExecutionTimes field.
uint64_t NowNs();

struct DurationStat {
  uint64_t count = 0;
  uint64_t ns = 0;
};

struct BatchStat {
  uint64_t batch_size = 0;
  DurationStat compute_input;
  DurationStat compute_infer;
  DurationStat compute_output;
};

struct ResponseStat {
  DurationStat compute_infer;
  DurationStat compute_output;
  DurationStat success;
  DurationStat fail;
  DurationStat empty_response;
  DurationStat cancel;
};

struct MemoryUsage {
  std::string type;  // "CPU", "CPU_PINNED", "GPU"
  int64_t id = 0;
  uint64_t byte_size = 0;
};

// How one response of a request ended, for response_stats (REFERENCE-2 §9.2): success counts
// compute_infer, compute_output and success; empty (no error, no output) compute_infer and
// empty_response; fail compute_infer, compute_output and fail; cancel only cancel.
enum class ResponseOutcome { kSuccess, kFail, kEmpty, kCancel };

// Why a request failed, as the nv_inference_request_failure metric labels it.
enum class FailureReason { kRejected, kCanceled, kBackend, kOther };
inline constexpr int kFailureReasonCount = 4;
const char* FailureReasonLabel(FailureReason reason);  // "REJECTED", "CANCELED", ...

struct ModelStatsSnapshot {
  uint64_t load_duration_ns = 0;  // how long loading this version took
  uint64_t last_inference_ms = 0;
  uint64_t inference_count = 0;
  uint64_t execution_count = 0;
  DurationStat success;
  DurationStat fail;
  DurationStat queue;
  DurationStat compute_input;
  DurationStat compute_infer;
  DurationStat compute_output;
  DurationStat cache_hit;
  DurationStat cache_miss;
  bool cache_enabled = false;  // the version uses the response cache
  std::array<uint64_t, kFailureReasonCount> fail_by_reason{};  // indexed by FailureReason
  int64_t pending_requests = 0;
  std::vector<BatchStat> batch_stats;  // executed sizes only, ascending
  // The queue time of every successful request (cache hits included), for percentiles.
  Log2HistogramCounts queue_histogram{};
  std::map<std::string, ResponseStat> response_stats;  // keyed by response index
  std::vector<MemoryUsage> memory_usage;
};

// When one execution (of one request, or of a batch of requests) ran, steady-clock ns.
// compute_start <= input_end <= output_start <= compute_end.
struct ExecutionTimes {
  uint64_t compute_start = 0;  // the core starts preparing inputs for the backend
  uint64_t input_end = 0;      // inputs ready, the framework starts computing
  uint64_t output_start = 0;   // computing done, outputs start being extracted
  uint64_t compute_end = 0;    // outputs extracted into the response
};

// The durations of one successful request, in nanoseconds, for observers that keep
// distributions (latency summaries). Counters and sums are in ModelStats already.
struct RequestLatencies {
  uint64_t request_ns = 0;
  uint64_t queue_ns = 0;
  uint64_t compute_input_ns = 0;
  uint64_t compute_infer_ns = 0;
  uint64_t compute_output_ns = 0;
};

// Sees every request of one model version that reached the scheduler. Its methods run on the
// request path, from any thread, concurrently; they must be cheap and must not block on I/O.
class LatencyObserver {
 public:
  virtual ~LatencyObserver() = default;
  virtual void Observe(const RequestLatencies& latencies) = 0;  // a successful request
  virtual void ObserveFailure(uint64_t request_ns) {}           // a failed one, arrival to end
};

// What an observer factory knows of the version it observes.
struct ObservedModel {
  std::string name;
  int64_t version = 0;
  bool decoupled = false;
  // The configuration's model_metrics histogram bucket overrides: (metric family, boundaries).
  std::vector<std::pair<std::string, std::vector<double>>> histogram_buckets;
};

// Makes the observer of one loaded model version, or returns nullptr for none.
using LatencyObserverFactory =
    std::function<std::unique_ptr<LatencyObserver>(const ObservedModel& model)>;

class ModelStats {
 public:
  // Batch statistics are kept for sizes 1..max(1, max_batch_size); larger sizes cannot execute.
  explicit ModelStats(int64_t max_batch_size);
  ModelStats(const ModelStats&) = delete;
  ModelStats& operator=(const ModelStats&) = delete;

  // One successful request of `batch_size` (0 or 1 count one inference) that entered the model's
  // queue at `queue_start`, was received at `request_start`, executed at `exec` and completed at
  // `request_end`.
  void RecordSuccess(int64_t batch_size, uint64_t request_start, uint64_t queue_start,
                     const ExecutionTimes& exec, uint64_t request_end);
  // A request answered from the response cache: counts in success (arrival to `lookup_end`),
  // queue (`queue_start` to `lookup_start`) and cache_hit (the lookup), nowhere else (seed 004).
  void RecordCacheHit(uint64_t request_start, uint64_t queue_start, uint64_t lookup_start,
                      uint64_t lookup_end);
  // A cache miss that then succeeded: its lookup + insert time, also added to success.
  void RecordCacheMiss(uint64_t ns);
  // The version uses the response cache: its per-model cache metrics are shown.
  void SetCacheEnabled() { cache_enabled_ = true; }

  // One failed request; its duration counts in `fail` only.
  void RecordFailure(FailureReason reason, uint64_t request_start, uint64_t request_end);
  // One successful model execution over `batch_size` batch elements (0 for non-batching models,
  // recorded as 1).
  void RecordExecution(int64_t batch_size, const ExecutionTimes& exec);
  // Response `index` of a request (0 for the only response of a non-decoupled model).
  void RecordResponse(uint64_t index, bool success, uint64_t compute_infer_ns,
                      uint64_t compute_output_ns) EXCLUDES(mu_) {
    RecordResponse(index, success ? ResponseOutcome::kSuccess : ResponseOutcome::kFail,
                   compute_infer_ns, compute_output_ns);
  }
  void RecordResponse(uint64_t index, ResponseOutcome outcome, uint64_t compute_infer_ns,
                      uint64_t compute_output_ns) EXCLUDES(mu_);

  // Requests queued for this version and not yet handed to an instance.
  void AddPending(int64_t delta) { pending_.fetch_add(delta, std::memory_order_relaxed); }

  // Measured once, at load, before the version serves.
  void SetMemoryUsage(std::vector<MemoryUsage> usage) EXCLUDES(mu_);
  void SetLoadDuration(uint64_t ns) { load_duration_ns_.store(ns, std::memory_order_relaxed); }
  // Installs the observer every RecordSuccess reports to. Call before the version serves (the
  // request path reads it without synchronisation of its own).
  void SetLatencyObserver(std::unique_ptr<LatencyObserver> observer) {
    observer_ = std::move(observer);
  }

  ModelStatsSnapshot Snapshot() const EXCLUDES(mu_);

 private:
  struct AtomicDuration {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> ns{0};
    void Add(uint64_t duration_ns) {
      count.fetch_add(1, std::memory_order_relaxed);
      ns.fetch_add(duration_ns, std::memory_order_relaxed);
    }
    DurationStat Load() const {
      return {count.load(std::memory_order_relaxed), ns.load(std::memory_order_relaxed)};
    }
  };
  // The three phases of an execution are always recorded together: one count serves them all
  // (fewer atomic read-modify-writes per execution).
  struct AtomicBatch {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> input_ns{0}, infer_ns{0}, output_ns{0};
  };

  std::unique_ptr<LatencyObserver> observer_;
  std::atomic<uint64_t> load_duration_ns_{0};
  std::atomic<uint64_t> last_inference_ms_{0};
  std::atomic<uint64_t> inference_count_{0};
  std::atomic<uint64_t> execution_count_{0};
  std::atomic<int64_t> pending_{0};
  // A successful request records all five durations at once; success_.count counts them all.
  AtomicDuration success_, fail_;
  std::atomic<uint64_t> queue_ns_{0}, compute_input_ns_{0}, compute_infer_ns_{0},
      compute_output_ns_{0};
  AtomicDuration cache_hit_, cache_miss_;
  Log2Histogram queue_histogram_;
  bool cache_enabled_ = false;  // set before the version serves
  std::array<std::atomic<uint64_t>, kFailureReasonCount> fail_by_reason_{};
  std::unique_ptr<AtomicBatch[]> batches_;  // index = batch size - 1
  size_t batch_slots_ = 0;

  struct AtomicResponse {
    AtomicDuration compute_infer, compute_output, success, fail, empty_response, cancel;
  };
  AtomicResponse first_response_;  // index 0, the one every request has: lock-free

  mutable Mutex mu_;
  // Index >= 1 (decoupled/streamed models).
  std::map<uint64_t, ResponseStat> later_responses_ GUARDED_BY(mu_);
  std::vector<MemoryUsage> memory_usage_ GUARDED_BY(mu_);
};

}  // namespace nereid
