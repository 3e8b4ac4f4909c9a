// The metrics that need every observation, not just the counters ModelStats keeps:
//   * latency summaries (nv_inference_*_summary_us), with --metrics-config summary_latencies=true;
//   * the time-to-first-response histogram (nv_inference_first_response_histogram_ms), with
//     histogram_latencies=true and for decoupled models only, as Triton creates it.
// They are fed on the request path through ModelStats' LatencyObserver hook and collected at
// scrape time. They are the only metrics that cost the request path anything: one mutex-guarded
// prometheus-cpp insert per summary (about 2 µs each) or per histogram, per request.
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/histogram.h>
#include <prometheus/summary.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "core/stats/model_stats.h"
#include "frontends/metrics/metrics_config.h"

namespace nereid {

inline constexpr char kFirstResponseHistogram[] = "nv_inference_first_response_histogram_ms";

// Triton's default buckets of the first-response histogram, in milliseconds.
std::vector<double> DefaultFirstResponseBuckets();

// The observed metrics of one model version.
class VersionLatencyMetrics {
 public:
  static constexpr int kSummaryCount = 5;  // request, queue, compute_input/infer/output

  VersionLatencyMetrics(const MetricsConfig& config, const ObservedModel& model);
  bool has_summaries() const { return !summaries_.empty(); }
  bool has_histogram() const { return histogram_ != nullptr; }

  void Observe(const RequestLatencies& latencies);
  void ObserveFailure(uint64_t request_ns);

  prometheus::ClientMetric CollectSummary(int which) const;  // requires has_summaries()
  prometheus::ClientMetric CollectHistogram() const;         // requires has_histogram()

 private:
  std::vector<std::unique_ptr<prometheus::Summary>> summaries_;
  std::unique_ptr<prometheus::Histogram> histogram_;
};

class LatencyMetrics {
 public:
  explicit LatencyMetrics(const MetricsConfig& config) : config_(config) {}

  // For ServerOptions::latency_observers: a version that needs none of the metrics above gets no
  // observer; a reload of the same version starts fresh ones, as Triton's reporter does.
  LatencyObserverFactory Factory();

  // The metrics of a loaded version, or nullptr.
  std::shared_ptr<const VersionLatencyMetrics> Find(const std::string& model, int64_t version) const
      EXCLUDES(mu_);

 private:
  MetricsConfig config_;
  mutable Mutex mu_;
  std::map<std::pair<std::string, int64_t>, std::weak_ptr<VersionLatencyMetrics>> by_version_
      GUARDED_BY(mu_);
};

}  // namespace nereid
