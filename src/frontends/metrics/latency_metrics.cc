#include "frontends/metrics/latency_metrics.h"

#include <algorithm>
#include <functional>

#include "common/logging.h"

namespace nereid {
namespace {

class Observer final : public LatencyObserver {
 public:
  explicit Observer(std::shared_ptr<VersionLatencyMetrics> metrics)
      : metrics_(std::move(metrics)) {}
  void Observe(const RequestLatencies& latencies) override { metrics_->Observe(latencies); }
  void ObserveFailure(uint64_t request_ns) override { metrics_->ObserveFailure(request_ns); }

 private:
  std::shared_ptr<VersionLatencyMetrics> metrics_;
};

// Whole microseconds and milliseconds, truncated, as Triton observes them.
double Us(uint64_t ns) { return static_cast<double>(ns / 1000); }
double Ms(uint64_t ns) { return static_cast<double>(ns / 1000000); }

}  // namespace

std::vector<double> DefaultFirstResponseBuckets() { return {100, 500, 2000, 5000}; }

VersionLatencyMetrics::VersionLatencyMetrics(const MetricsConfig& config,
                                             const ObservedModel& model) {
  if (config.summary_latencies) {
    prometheus::Summary::Quantiles quantiles;
    for (const auto& [q, e] : config.quantiles) quantiles.emplace_back(q, e);
    for (int i = 0; i < kSummaryCount; ++i) {
      summaries_.push_back(std::make_unique<prometheus::Summary>(quantiles));
    }
  }
  if (config.histogram_latencies && model.decoupled) {
    std::vector<double> buckets = DefaultFirstResponseBuckets();
    for (const auto& [family, bounds] : model.histogram_buckets) {
      if (family == kFirstResponseHistogram) {
        // prometheus-cpp refuses boundaries that are not strictly increasing (by throwing).
        if (!bounds.empty() && std::adjacent_find(bounds.begin(), bounds.end(),
                                                  std::greater_equal<double>()) == bounds.end()) {
          buckets = bounds;
        } else {
          LOG_WARNING(
              "model '{}': histogram buckets of {} must be strictly increasing; using "
              "the defaults",
              model.name, family);
        }
      } else {
        LOG_WARNING("Metric family '{}' in 'metric_identifier' is not a customizable metric",
                    family);
      }
    }
    histogram_ = std::make_unique<prometheus::Histogram>(buckets);
  }
}

void VersionLatencyMetrics::Observe(const RequestLatencies& l) {
  if (!summaries_.empty()) {
    summaries_[0]->Observe(Us(l.request_ns));
    summaries_[1]->Observe(Us(l.queue_ns));
    summaries_[2]->Observe(Us(l.compute_input_ns));
    summaries_[3]->Observe(Us(l.compute_infer_ns));
    summaries_[4]->Observe(Us(l.compute_output_ns));
  }
  // One response per request: it is the first response, ready when the request completes.
  if (histogram_) histogram_->Observe(Ms(l.request_ns));
}

void VersionLatencyMetrics::ObserveFailure(uint64_t request_ns) {
  // Triton observes the first response whatever it carries, errors included.
  if (histogram_) histogram_->Observe(Ms(request_ns));
}

prometheus::ClientMetric VersionLatencyMetrics::CollectSummary(int which) const {
  return summaries_.at(static_cast<size_t>(which))->Collect();
}

prometheus::ClientMetric VersionLatencyMetrics::CollectHistogram() const {
  return histogram_->Collect();
}

LatencyObserverFactory LatencyMetrics::Factory() {
  return [this](const ObservedModel& model) -> std::unique_ptr<LatencyObserver> {
    auto metrics = std::make_shared<VersionLatencyMetrics>(config_, model);
    if (!metrics->has_summaries() && !metrics->has_histogram()) return nullptr;
    MutexLock lock(mu_);
    by_version_[{model.name, model.version}] = metrics;
    return std::make_unique<Observer>(std::move(metrics));
  };
}

std::shared_ptr<const VersionLatencyMetrics> LatencyMetrics::Find(const std::string& model,
                                                                  int64_t version) const {
  MutexLock lock(mu_);
  auto it = by_version_.find({model, version});
  return it == by_version_.end() ? nullptr : it->second.lock();
}

}  // namespace nereid
