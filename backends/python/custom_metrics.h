// The metric families model.py creates with pb_utils.MetricFamily (Triton's custom metrics API),
// kept by the python backend for every model it serves and shown on the server's /metrics
// (Backend::MetricFamilies). Rules and texts as Triton's core (src/metric_family.cc) and its
// prometheus-cpp registry: a family name is global; the same name again with the same kind is the
// same family (the first description stays), with another kind an error; the same labels in one
// family are the same metric. Every handle belongs to an owner (one stub process); dropping the
// owner (the stub exits or is restarted, the model unloads) drops its handles, and a metric or
// family nobody holds any more disappears from /metrics.
//
// Thread-safety: thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "nereid/backend_api.h"
#include "nereid/status.h"

namespace nereid::backends::python {

enum class MetricOp { kIncrement, kSet, kObserve, kValue };

class CustomMetrics {
 public:
  // A new family handle of `owner`. Errors: INVALID_ARG `Invalid metric name`, `Family name
  // already exists with different type`.
  StatusOr<int64_t> NewFamily(int64_t owner, const std::string& name,
                              const std::string& description, backend::MetricKind kind)
      EXCLUDES(mu_);
  // A new metric handle of `owner` in family handle `family`; `buckets` for histograms only.
  StatusOr<int64_t> NewMetric(int64_t owner, int64_t family,
                              const std::map<std::string, std::string>& labels,
                              const std::optional<std::vector<double>>& buckets) EXCLUDES(mu_);
  // increment / set / observe (returns 0) or value (returns it), with Triton's texts.
  StatusOr<double> Apply(int64_t owner, int64_t metric, MetricOp op, double value) EXCLUDES(mu_);
  // Drops one handle (a family handle also drops nothing else: its metrics keep the family).
  void Release(int64_t owner, int64_t handle) EXCLUDES(mu_);
  // Drops every handle of `owner`.
  void ReleaseOwner(int64_t owner) EXCLUDES(mu_);

  std::vector<backend::MetricFamilySnapshot> Snapshot() const EXCLUDES(mu_);

 private:
  struct Metric {
    std::map<std::string, std::string> labels;
    double value = 0;
    std::vector<double> bounds;
    std::vector<uint64_t> counts;  // per bound, not cumulative
    uint64_t count = 0;
    double sum = 0;
    int refs = 0;
  };
  struct Family {
    std::string help;
    backend::MetricKind kind = backend::MetricKind::kCounter;
    std::map<std::map<std::string, std::string>, Metric> metrics;
    int refs = 0;  // family handles and metric handles
  };
  struct Handle {
    int64_t owner = 0;
    std::string family;
    std::optional<std::map<std::string, std::string>> labels;  // set: a metric handle
  };
  void ReleaseLocked(std::map<int64_t, Handle>::iterator it) REQUIRES(mu_);

  mutable Mutex mu_;
  std::map<std::string, Family> families_ GUARDED_BY(mu_);
  std::map<int64_t, Handle> handles_ GUARDED_BY(mu_);
  int64_t next_handle_ GUARDED_BY(mu_) = 1;
};

// Prometheus' rules as prometheus-cpp checks them.
bool IsValidMetricName(const std::string& name);
bool IsValidLabelName(const std::string& name);

}  // namespace nereid::backends::python
