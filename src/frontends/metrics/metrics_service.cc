#include "frontends/metrics/metrics_service.h"

#include "core/server/inference_server.h"
#include "frontends/metrics/cpu_metrics.h"
#include "frontends/metrics/latency_metrics.h"
#include "frontends/metrics/metrics_text.h"

namespace nereid {

struct MetricsService::Impl {
  MetricsOptions options;
  std::unique_ptr<LatencyMetrics> latencies;  // only with summary or histogram latencies
  std::unique_ptr<CpuMonitor> cpu;            // only with allow_cpu, from Serve on
  InferenceServer* server = nullptr;
  std::unique_ptr<MetricsEndpoint> endpoint;
};

MetricsService::MetricsService(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
MetricsService::~MetricsService() { Stop(); }

StatusOr<std::unique_ptr<MetricsService>> MetricsService::Create(const MetricsOptions& options) {
  if (options.interval_ms <= 0) {
    return InvalidArgument("--metrics-interval-ms must be a positive number of milliseconds");
  }
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (options.config.summary_latencies || options.config.histogram_latencies) {
    impl->latencies = std::make_unique<LatencyMetrics>(options.config);
  }
  return std::unique_ptr<MetricsService>(new MetricsService(std::move(impl)));
}

LatencyObserverFactory MetricsService::LatencyObservers() {
  return impl_->latencies ? impl_->latencies->Factory() : LatencyObserverFactory();
}

std::string MetricsService::Scrape() const {
  MetricsInput input;
  if (impl_->server != nullptr) {
    auto models = impl_->server->GetModelStatistics("", -1);
    if (models.ok()) input.models = std::move(*models);
  }
  if (impl_->server != nullptr) input.backend_families = impl_->server->BackendMetricFamilies();
  if (impl_->cpu) input.cpu = impl_->cpu->Read();
  if (impl_->server != nullptr && impl_->server->response_cache() != nullptr) {
    input.cache = impl_->server->response_cache()->Stats();
  }
  if (impl_->latencies) {
    const LatencyMetrics* l = impl_->latencies.get();
    input.latencies = [l](const std::string& model, int64_t version) {
      return l->Find(model, version);
    };
  }
  return RenderMetrics(BuildMetricFamilies(input, impl_->options.config));
}

Status MetricsService::Serve(InferenceServer* server, const MetricsEndpointFactory& endpoint) {
  impl_->server = server;
  if (impl_->options.allow_cpu) {
    impl_->cpu = std::make_unique<CpuMonitor>(impl_->options.interval_ms);
  }
  const MetricsService* self = this;
  NEREID_ASSIGN_OR_RETURN(impl_->endpoint, endpoint(impl_->options.address, impl_->options.port,
                                                    [self] { return self->Scrape(); }));
  return Status::Ok();
}

int MetricsService::port() const { return impl_->endpoint ? impl_->endpoint->port() : 0; }

void MetricsService::Stop() {
  if (impl_->endpoint) {
    impl_->endpoint->Stop();
    impl_->endpoint.reset();
  }
}

}  // namespace nereid
