// The Prometheus endpoint: `GET /metrics` on its own port (--metrics-port, default 8002) with the
// families of metrics_text.h (see docs/adr/0007-metrics-endpoint.md). This library knows no
// transport: Serve takes a MetricsEndpointFactory, which src/app binds to the project's HTTP server
// (app/metrics_endpoint.h: anything but GET answers 405 and any other path 400, as Triton's
// HTTPMetricsServer does).
//
// Life cycle (src/app/main.cc): Create (before the InferenceServer, whose models need the latency
// observer factory) -> Serve(server, endpoint) -> Stop(). CPU metrics (allow_cpu) are read on
// scrape (cpu_metrics.h): no thread of their own.
//
// Thread-safety: Create/Serve/Stop from one controlling thread; scrapes run on the endpoint's
// threads.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/stats/model_stats.h"
#include "frontends/metrics/metrics_config.h"
#include "nereid/status.h"

namespace nereid {

class InferenceServer;

struct MetricsOptions {
  std::string address = "0.0.0.0";
  int port = 8002;  // 0: any free port (see port())
  bool allow_cpu = true;
  int interval_ms = 2000;  // --metrics-interval-ms: CPU readings refresh every interval_ms / 2
  MetricsConfig config;
};

// What the metrics frontend needs from a transport: something serving `scrape()`'s text at
// GET /metrics on an address and port until Stop().
class MetricsEndpoint {
 public:
  virtual ~MetricsEndpoint() = default;
  virtual int port() const = 0;  // the bound port (useful with port 0)
  virtual void Stop() = 0;       // no scrape runs once this returns
};

// Binds address:port (port 0: any free port) and starts serving `scrape`; a busy port fails here.
using MetricsEndpointFactory = std::function<StatusOr<std::unique_ptr<MetricsEndpoint>>(
    const std::string& address, int port, std::function<std::string()> scrape)>;

class MetricsService {
 public:
  static StatusOr<std::unique_ptr<MetricsService>> Create(const MetricsOptions& options);
  ~MetricsService();  // Stop()
  MetricsService(const MetricsService&) = delete;
  MetricsService& operator=(const MetricsService&) = delete;

  // What ServerOptions::latency_observers should be: empty unless summaries or histograms are on.
  LatencyObserverFactory LatencyObservers();

  // Binds (through `endpoint`) and starts serving scrapes of `server`, which must outlive Stop().
  Status Serve(InferenceServer* server, const MetricsEndpointFactory& endpoint);
  int port() const;
  // The text a scrape returns now.
  std::string Scrape() const;
  void Stop();

  struct Impl;

 private:
  explicit MetricsService(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nereid
