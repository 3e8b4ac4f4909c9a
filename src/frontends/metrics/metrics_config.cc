#include "frontends/metrics/metrics_config.h"

#include <charconv>
#include <cmath>
#include <sstream>

namespace nereid {
namespace {

bool ParseDouble(const std::string& s, double* out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, *out);
  return ec == std::errc() && ptr == end && std::isfinite(*out);
}

// "0.5:0.05,0.9:0.01": pairs that do not parse, or lie outside [0, 1], are skipped with a warning.
std::vector<std::pair<double, double>> ParseQuantiles(const std::string& text,
                                                      std::vector<std::string>* warnings) {
  std::vector<std::pair<double, double>> out;
  std::stringstream ss(text);
  std::string pair;
  while (std::getline(ss, pair, ',')) {
    const size_t colon = pair.find(':');
    double q = 0;
    double e = 0;
    if (colon == std::string::npos || !ParseDouble(pair.substr(0, colon), &q) ||
        !ParseDouble(pair.substr(colon + 1), &e) || q < 0 || q > 1 || e < 0 || e > 1) {
      warnings->push_back("ignoring summary quantile '" + pair +
                          "': expected <quantile>:<error> with both in [0, 1]");
      continue;
    }
    out.emplace_back(q, e);
  }
  return out;
}

void CheckBool(const std::string& key, const std::string& value,
               std::vector<std::string>* warnings) {
  if (value != "true" && value != "false") {
    warnings->push_back("--metrics-config " + key + "=" + value +
                        ": only 'true' and 'false' are meaningful");
  }
}

}  // namespace

Status ApplyMetricsConfig(const std::string& option, MetricsConfig* config,
                          std::vector<std::string>* warnings) {
  const size_t eq = option.find('=');
  if (eq == std::string::npos || eq == 0) {
    return InvalidArgument("--metrics-config option format is '<setting>=<value>'. Got " + option);
  }
  const std::string key = option.substr(0, eq);
  const std::string value = option.substr(eq + 1);
  if (key == "counter_latencies") {
    CheckBool(key, value, warnings);
    config->counter_latencies = value != "false";
  } else if (key == "histogram_latencies") {
    CheckBool(key, value, warnings);
    config->histogram_latencies = value == "true";
  } else if (key == "summary_latencies") {
    CheckBool(key, value, warnings);
    config->summary_latencies = value == "true";
  } else if (key == "summary_quantiles") {
    auto quantiles = ParseQuantiles(value, warnings);
    if (!quantiles.empty()) config->quantiles = std::move(quantiles);
  } else {
    warnings->push_back("unknown --metrics-config setting '" + key + "' is ignored");
  }
  return Status::Ok();
}

}  // namespace nereid
