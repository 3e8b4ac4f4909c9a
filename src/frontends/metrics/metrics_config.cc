#include "frontends/metrics/metrics_config.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace nereid {
namespace {

// std::stod's leniency, as Triton reads each number: leading blanks are skipped and whatever
// follows the longest number is ignored ("0.05 0.9" is 0.05). Nereid also requires a finite
// value, where Triton lets std::stod's out_of_range escape.
bool ParseLeadingDouble(const std::string& s, double* out) {
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(s.c_str(), &end);
  return end != s.c_str() && errno != ERANGE && std::isfinite(*out);
}

// "0.5:0.05,0.9:0.01" split on ',' only, as Triton's MetricReporterConfig::ParseQuantiles does.
// A pair without ':' or without a leading number is skipped with Triton's message; Nereid also
// skips quantiles and errors outside [0, 1], which prometheus-cpp's summary cannot honour.
std::vector<std::pair<double, double>> ParseQuantiles(const std::string& text,
                                                      std::vector<std::string>* warnings) {
  std::vector<std::pair<double, double>> out;
  std::stringstream ss(text);
  std::string pair;
  while (std::getline(ss, pair, ',')) {
    const size_t colon = pair.find(':');
    if (colon == std::string::npos) {
      warnings->push_back("Invalid option: [" + pair +
                          "]. No ':' delimiter found. Expected format is <quantile>:<error>");
      continue;
    }
    double q = 0;
    double e = 0;
    if (!ParseLeadingDouble(pair.substr(0, colon), &q) ||
        !ParseLeadingDouble(pair.substr(colon + 1), &e)) {
      warnings->push_back("Invalid option: [" + pair + "]. Error: stod");
      continue;
    }
    if (q < 0 || q > 1 || e < 0 || e > 1) {
      warnings->push_back("ignoring summary quantile '" + pair +
                          "': the quantile and its error must both be in [0, 1]");
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
  // Triton's ParseMetricsConfigOption: "<setting>=<value>", both non-empty, and no ',' before the
  // '=' (that would name a group, which Triton does not have yet).
  const std::string format = "--metrics-config option format is <setting>=<value>. Got " + option;
  const size_t eq = option.find('=');
  if (eq == std::string::npos) return InvalidArgument(format);
  const std::string key = option.substr(0, eq);
  const std::string value = option.substr(eq + 1);
  if (key.empty() || value.empty() || key.find(',') != std::string::npos) {
    return InvalidArgument(format);
  }
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
