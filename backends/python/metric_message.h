// The stub's custom-metric messages (pb_utils.MetricFamily / Metric, docs/python_backend.md):
// a frame whose JSON has "op": "metric" and an "action":
//   "family"  {name, description, kind: "COUNTER"|"GAUGE"|"HISTOGRAM"}   -> id
//   "metric"  {family: id, labels: {name: string...}, buckets: [number...] or absent} -> id
//   "apply"   {metric: id, what: "increment"|"set"|"observe"|"value", value: number} -> value
//   "release" {id}                                                      (no answer)
// Every action but "release" carries a "tag" echoed by the answer (EncodeMetricAnswer).
// Untrusted input (the stub runs user code): fuzzed by fuzz_python_stub.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nereid/status.h"
#include "python/custom_metrics.h"

namespace nereid::backends::python {

struct MetricMessage {
  enum class Action { kFamily, kMetric, kApply, kRelease };
  Action action = Action::kRelease;
  int64_t tag = 0;
  std::string name;
  std::string description;
  backend::MetricKind kind = backend::MetricKind::kCounter;
  int64_t id = 0;  // family (kMetric), metric (kApply), any handle (kRelease)
  std::map<std::string, std::string> labels;
  std::optional<std::vector<double>> buckets;
  MetricOp op = MetricOp::kValue;
  double value = 0;
};

// Parses the JSON part of an "op": "metric" frame; errors are INVALID_ARG.
StatusOr<MetricMessage> ParseMetricMessage(std::string_view json);

// The answer to a tagged metric message: the result (an id or a value) or the error.
std::string EncodeMetricAnswer(int64_t tag, const StatusOr<double>& result);

}  // namespace nereid::backends::python
