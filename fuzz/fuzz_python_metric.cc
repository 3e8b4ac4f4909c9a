// The Python backend's custom-metric messages (backends/python/metric_message.h): what a stub
// running user code sends for pb_utils.MetricFamily / Metric. Parsing must reject anything
// malformed without crashing; what parses is applied to a CustomMetrics registry, which must
// answer every call with a value or an error.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "python/custom_metrics.h"
#include "python/metric_message.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace nereid::backends::python;
  static CustomMetrics metrics;
  auto m = ParseMetricMessage(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!m.ok()) return 0;
  switch (m->action) {
    case MetricMessage::Action::kFamily:
      (void)metrics.NewFamily(1, m->name, m->description, m->kind);
      break;
    case MetricMessage::Action::kMetric:
      (void)metrics.NewMetric(1, m->id, m->labels, m->buckets);
      break;
    case MetricMessage::Action::kApply:
      (void)metrics.Apply(1, m->id, m->op, m->value);
      break;
    case MetricMessage::Action::kRelease:
      metrics.Release(1, m->id);
      break;
  }
  (void)EncodeMetricAnswer(m->tag, metrics.Snapshot().empty() ? 0.0 : 1.0);
  if (metrics.Snapshot().size() > 64) metrics.ReleaseOwner(1);
  return 0;
}
