// A read-only text endpoint on its own HttpServer, for the metrics port: `GET <path>` answers 200
// text/plain with what `text()` returns at that moment; any other method answers 405 and any other
// path 400, as Triton's HTTPMetricsServer does (here with a JSON error body). Request bodies are
// capped at 64 KiB. It runs on a host HttpServer's event loop when given one (a guest: no thread
// of its own), else on a server of its own with one I/O thread.
//
// Usage (src/app/metrics_endpoint.cc): StartTextEndpoint(options, scrape, host) -> ... ->
// Stop(timeout).
// Thread-safety: `text` runs on the I/O threads, concurrently when there are several; after
// HttpServer::Stop returns it no longer runs.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "frontends/http/http_server.h"
#include "nereid/status.h"

namespace nereid {

struct TextEndpointOptions {
  std::string address = "0.0.0.0";
  int port = 8002;  // 0: any free port (see HttpServer::port())
  std::string path = "/metrics";
  std::string thread_name = "metrics-http";  // of its one I/O thread (without a host)
};

// Binds and starts serving; a busy port fails here. `host`, when not null, must be started.
StatusOr<std::unique_ptr<HttpServer>> StartTextEndpoint(const TextEndpointOptions& options,
                                                        std::function<std::string()> text,
                                                        HttpServer* host = nullptr);

}  // namespace nereid
