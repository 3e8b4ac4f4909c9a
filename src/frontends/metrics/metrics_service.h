// The Prometheus endpoint: `GET /metrics` on its own port (--metrics-port, default 8002), served
// by the project's own HTTP server (see docs/adr/0007-metrics-endpoint.md), with the families of
// metrics_text.h. Anything but GET answers 405 and any other path 400, as Triton's
// HTTPMetricsServer does (here with a JSON error body).
//
// Life cycle (src/app/main.cc): Create (before the InferenceServer, whose models need the latency
// observer factory) -> Serve(server) -> Stop(). The CPU poller runs only with allow_cpu.
//
// Thread-safety: Create/Serve/Stop from one controlling thread; scrapes run on the HTTP threads.
#pragma once

#include <chrono>
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
  int interval_ms = 2000;  // CPU poll period
  MetricsConfig config;
};

class MetricsService {
 public:
  static StatusOr<std::unique_ptr<MetricsService>> Create(const MetricsOptions& options);
  ~MetricsService();  // Stop()
  MetricsService(const MetricsService&) = delete;
  MetricsService& operator=(const MetricsService&) = delete;

  // What ServerOptions::latency_observers should be: empty unless summaries or histograms are on.
  LatencyObserverFactory LatencyObservers();

  // Binds and starts serving scrapes of `server`, which must outlive Stop().
  Status Serve(InferenceServer* server);
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
