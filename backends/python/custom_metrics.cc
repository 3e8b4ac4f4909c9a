#include "python/custom_metrics.h"

#include <algorithm>

namespace nereid::backends::python {
namespace {

bool IsAlpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

const char* KindName(backend::MetricKind kind) {
  switch (kind) {
    case backend::MetricKind::kCounter:
      return "TRITONSERVER_METRIC_KIND_COUNTER";
    case backend::MetricKind::kGauge:
      return "TRITONSERVER_METRIC_KIND_GAUGE";
    case backend::MetricKind::kHistogram:
      break;
  }
  return "TRITONSERVER_METRIC_KIND_HISTOGRAM";
}

}  // namespace

bool IsValidMetricName(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  if (!IsAlpha(name[0]) && name[0] != '_' && name[0] != ':') return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_' || c == ':'; });
}

bool IsValidLabelName(const std::string& name) {
  if (name.empty() || name.rfind("__", 0) == 0) return false;
  if (!IsAlpha(name[0]) && name[0] != '_') return false;
  return std::all_of(name.begin(), name.end(),
                     [](char c) { return IsAlpha(c) || IsDigit(c) || c == '_'; });
}

StatusOr<int64_t> CustomMetrics::NewFamily(int64_t owner, const std::string& name,
                                           const std::string& description,
                                           backend::MetricKind kind) {
  if (!IsValidMetricName(name)) return InvalidArgument("Invalid metric name");
  MutexLock lock(mu_);
  auto it = families_.find(name);
  if (it == families_.end()) {
    it = families_.emplace(name, Family{description, kind, {}, 0}).first;
  } else if (it->second.kind != kind) {
    return InvalidArgument("Family name already exists with different type");
  }
  ++it->second.refs;
  const int64_t id = next_handle_++;
  handles_[id] = {owner, name, std::nullopt};
  return id;
}

StatusOr<int64_t> CustomMetrics::NewMetric(int64_t owner, int64_t family,
                                           const std::map<std::string, std::string>& labels,
                                           const std::optional<std::vector<double>>& buckets) {
  for (const auto& [name, value] : labels) {
    if (!IsValidLabelName(name)) return InvalidArgument("Invalid label name");
  }
  MutexLock lock(mu_);
  auto h = handles_.find(family);
  if (h == handles_.end() || h->second.owner != owner || h->second.labels.has_value()) {
    return InvalidArgument(
        "Invalid metric operation as the corresponding 'MetricFamily' has "
        "been deleted.");
  }
  Family& f = families_.at(h->second.family);
  if (f.kind == backend::MetricKind::kHistogram) {
    if (!buckets.has_value()) return InvalidArgument("Bucket boundaries not found in Metric args.");
    for (size_t i = 1; i < buckets->size(); ++i) {
      if (!((*buckets)[i - 1] < (*buckets)[i])) {
        return InvalidArgument("Bucket Boundaries must be strictly sorted");
      }
    }
  } else if (buckets.has_value()) {
    return InvalidArgument(f.kind == backend::MetricKind::kCounter
                               ? "Unexpected args found in counter Metric constructor."
                               : "Unexpected args found in gauge Metric constructor.");
  }
  auto [m, added] = f.metrics.try_emplace(labels);
  if (added) {
    m->second.labels = labels;
    if (buckets.has_value()) {
      m->second.bounds = *buckets;
      m->second.counts.assign(buckets->size(), 0);
    }
  }
  ++m->second.refs;
  ++f.refs;
  const int64_t id = next_handle_++;
  handles_[id] = {owner, h->second.family, labels};
  return id;
}

StatusOr<double> CustomMetrics::Apply(int64_t owner, int64_t metric, MetricOp op, double value) {
  MutexLock lock(mu_);
  auto h = handles_.find(metric);
  if (h == handles_.end() || h->second.owner != owner || !h->second.labels.has_value()) {
    return InvalidArgument(
        "Invalid metric operation as the corresponding 'MetricFamily' has "
        "been deleted.");
  }
  Family& f = families_.at(h->second.family);
  Metric& m = f.metrics.at(*h->second.labels);
  const std::string kind = KindName(f.kind);
  switch (op) {
    case MetricOp::kValue:
      if (f.kind == backend::MetricKind::kHistogram) {
        return Unsupported(kind + " does not support Value");
      }
      return m.value;
    case MetricOp::kIncrement:
      if (f.kind == backend::MetricKind::kHistogram) {
        return Unsupported(kind + " does not support Increment");
      }
      if (f.kind == backend::MetricKind::kCounter && value < 0.0) {
        return InvalidArgument(kind +
                               " can only be incremented monotonically by non-negative values.");
      }
      m.value += value;
      return 0.0;
    case MetricOp::kSet:
      if (f.kind != backend::MetricKind::kGauge) return Unsupported(kind + " does not support Set");
      m.value = value;
      return 0.0;
    case MetricOp::kObserve:
      if (f.kind != backend::MetricKind::kHistogram) {
        return Unsupported(kind + " does not support Observe");
      }
      for (size_t i = 0; i < m.bounds.size(); ++i) {
        if (value <= m.bounds[i]) {
          ++m.counts[i];
          break;
        }
      }
      ++m.count;
      m.sum += value;
      return 0.0;
  }
  return Internal("unknown metric operation");
}

void CustomMetrics::ReleaseLocked(std::map<int64_t, Handle>::iterator it) {
  auto f = families_.find(it->second.family);
  if (f != families_.end()) {
    if (it->second.labels.has_value()) {
      auto m = f->second.metrics.find(*it->second.labels);
      if (m != f->second.metrics.end() && --m->second.refs == 0) f->second.metrics.erase(m);
    }
    if (--f->second.refs == 0) families_.erase(f);
  }
  handles_.erase(it);
}

void CustomMetrics::Release(int64_t owner, int64_t handle) {
  MutexLock lock(mu_);
  auto it = handles_.find(handle);
  if (it != handles_.end() && it->second.owner == owner) ReleaseLocked(it);
}

void CustomMetrics::ReleaseOwner(int64_t owner) {
  MutexLock lock(mu_);
  for (auto it = handles_.begin(); it != handles_.end();) {
    auto next = std::next(it);
    if (it->second.owner == owner) ReleaseLocked(it);
    it = next;
  }
}

std::vector<backend::MetricFamilySnapshot> CustomMetrics::Snapshot() const {
  MutexLock lock(mu_);
  std::vector<backend::MetricFamilySnapshot> out;
  for (const auto& [name, f] : families_) {
    backend::MetricFamilySnapshot s{name, f.help, f.kind, {}};
    for (const auto& [labels, m] : f.metrics) {
      backend::MetricSample sample;
      sample.labels.assign(labels.begin(), labels.end());
      sample.value = m.value;
      sample.bounds = m.bounds;
      uint64_t total = 0;
      for (uint64_t c : m.counts) sample.cumulative_counts.push_back(total += c);
      sample.count = m.count;
      sample.sum = m.sum;
      s.samples.push_back(std::move(sample));
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace nereid::backends::python
