// What `--metrics-config <setting>=<value>` selects (REFERENCE.md §3, §4), parsed as Triton's
// MetricReporterConfig::ParseConfig reads it: counters on unless counter_latencies=false,
// histograms and summaries off unless =true, summary quantiles "<q>:<error>,...".
//
// Not thread-safe while being filled; read-only afterwards.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "nereid/status.h"

namespace nereid {

struct MetricsConfig {
  bool counter_latencies = true;
  bool histogram_latencies = false;
  bool summary_latencies = false;
  // (quantile, allowed error), Triton's defaults.
  std::vector<std::pair<double, double>> quantiles = {
      {0.5, 0.05}, {0.9, 0.01}, {0.95, 0.001}, {0.99, 0.001}, {0.999, 0.001}};
};

// Applies one "<setting>=<value>". A malformed option (no '=', an empty setting or value, a ','
// before the '=') is INVALID_ARG with Triton's message. Unknown settings and unusable quantile
// pairs are accepted and reported in `warnings` (Triton logs and ignores them); quantile numbers
// are read as leniently as Triton's std::stod reads them.
Status ApplyMetricsConfig(const std::string& option, MetricsConfig* config,
                          std::vector<std::string>* warnings);

}  // namespace nereid
