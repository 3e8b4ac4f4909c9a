// Latency summaries (nv_inference_*_summary_us) for every loaded model version, fed on the request
// path by ModelStats' LatencyObserver hook and collected at scrape time. Exists only when
// --metrics-config summary_latencies=true: it is the only metrics feature that costs the request
// path anything (one mutex-guarded CKMS insert per summary, per request, per model version).
//
// Thread-safety: every method may be called from any thread.
#pragma once

#include <prometheus/client_metric.h>
#include <prometheus/summary.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/stats/model_stats.h"
#include "frontends/metrics/metrics_config.h"

namespace nereid {

// The five summaries of one model version, in Triton's family order.
class VersionSummaries {
 public:
  static constexpr int kCount = 5;  // request, queue, compute_input, compute_infer, compute_output
  explicit VersionSummaries(const prometheus::Summary::Quantiles& quantiles);
  void Observe(const RequestLatencies& latencies);
  prometheus::ClientMetric Collect(int which) const;

 private:
  std::vector<std::unique_ptr<prometheus::Summary>> summaries_;
};

class LatencySummaries {
 public:
  explicit LatencySummaries(const MetricsConfig& config);

  // For ServerOptions::latency_observers: each loaded version gets an observer feeding its own
  // summaries; a reload of the same version starts fresh ones, as Triton's reporter does.
  LatencyObserverFactory Factory();

  // The summaries of a loaded version, or nullptr.
  std::shared_ptr<const VersionSummaries> Find(const std::string& model, int64_t version) const;

 private:
  prometheus::Summary::Quantiles quantiles_;
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int64_t>, std::weak_ptr<VersionSummaries>> by_version_;
};

}  // namespace nereid
