#include "frontends/metrics/latency_summaries.h"

namespace nereid {
namespace {

class Observer final : public LatencyObserver {
 public:
  explicit Observer(std::shared_ptr<VersionSummaries> summaries)
      : summaries_(std::move(summaries)) {}
  void Observe(const RequestLatencies& latencies) override { summaries_->Observe(latencies); }

 private:
  std::shared_ptr<VersionSummaries> summaries_;
};

}  // namespace

VersionSummaries::VersionSummaries(const prometheus::Summary::Quantiles& quantiles) {
  for (int i = 0; i < kCount; ++i) {
    summaries_.push_back(std::make_unique<prometheus::Summary>(quantiles));
  }
}

void VersionSummaries::Observe(const RequestLatencies& l) {
  // Microseconds, truncated, as Triton observes them.
  summaries_[0]->Observe(static_cast<double>(l.request_ns / 1000));
  summaries_[1]->Observe(static_cast<double>(l.queue_ns / 1000));
  summaries_[2]->Observe(static_cast<double>(l.compute_input_ns / 1000));
  summaries_[3]->Observe(static_cast<double>(l.compute_infer_ns / 1000));
  summaries_[4]->Observe(static_cast<double>(l.compute_output_ns / 1000));
}

prometheus::ClientMetric VersionSummaries::Collect(int which) const {
  return summaries_.at(static_cast<size_t>(which))->Collect();
}

LatencySummaries::LatencySummaries(const MetricsConfig& config) {
  for (const auto& [q, e] : config.quantiles) quantiles_.emplace_back(q, e);
}

LatencyObserverFactory LatencySummaries::Factory() {
  return [this](const std::string& model, int64_t version) -> std::unique_ptr<LatencyObserver> {
    auto summaries = std::make_shared<VersionSummaries>(quantiles_);
    std::lock_guard<std::mutex> lock(mu_);
    by_version_[{model, version}] = summaries;
    return std::make_unique<Observer>(std::move(summaries));
  };
}

std::shared_ptr<const VersionSummaries> LatencySummaries::Find(const std::string& model,
                                                               int64_t version) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_version_.find({model, version});
  return it == by_version_.end() ? nullptr : it->second.lock();
}

}  // namespace nereid
