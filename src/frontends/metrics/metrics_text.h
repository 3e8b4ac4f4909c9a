// The Prometheus text exposition of Triton's metric families (REFERENCE.md §4), built at scrape
// time from statistics snapshots: the request path records only ModelStats' counters, and every
// per-model family here is derived from them. Families come in Triton's registry order; labels
// are model, version and one `_<tag>` per metric_tags entry (sorted, as prometheus-cpp writes
// them), plus `reason` on failures, `quantile` on summaries and `le` on the histogram.
//
// Stateless functions; thread-safe.
#pragma once

#include <prometheus/metric_family.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/server/inference_server.h"
#include "frontends/metrics/cpu_metrics.h"
#include "frontends/metrics/latency_metrics.h"
#include "frontends/metrics/metrics_config.h"

namespace nereid {

struct MetricsInput {
  std::vector<ModelVersionStatistics> models;
  std::optional<CpuReading> cpu;    // absent when --allow-cpu-metrics=false
  std::optional<CacheStats> cache;  // the response cache's, when the server has one
  // The summaries and histogram of a version (nullptr: none).
  std::function<std::shared_ptr<const VersionLatencyMetrics>(const std::string&, int64_t)>
      latencies;
  // The backend plugins' own families (InferenceServer::BackendMetricFamilies), shown last.
  std::vector<backend::MetricFamilySnapshot> backend_families;
};

std::vector<prometheus::MetricFamily> BuildMetricFamilies(const MetricsInput& input,
                                                          const MetricsConfig& config);

// Text format 0.0.4 of the families.
std::string RenderMetrics(const std::vector<prometheus::MetricFamily>& families);

// Whether `_<tag>` is a valid Prometheus label name (tags that are not are left out).
bool IsValidTagLabel(const std::string& tag);

}  // namespace nereid
