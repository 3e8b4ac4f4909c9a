// Triton's `tritonserver` command line (REFERENCE.md §3), parsed with CLI11 into AppOptions.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/logging.h"
#include "common/restricted_features.h"
#include "core/server/inference_server.h"
#include "frontends/grpc/grpc_server.h"
#include "frontends/metrics/metrics_service.h"
#include "nereid/status.h"

namespace nereid {

struct HttpOptions {
  bool allow = true;
  std::string address = "0.0.0.0";
  int port = 8000;
  int thread_count = 8;  // Triton's default; without the flag, DefaultHttpThreadCount()
  int64_t max_input_size = 64 * 1024 * 1024;
  bool reuse_port = false;
  // Nereid's own (Triton has none); docs/security.md. Zero disables a timeout.
  int idle_timeout_secs = 120;
  int header_timeout_secs = 30;
  int read_timeout_secs = 60;
  int64_t max_connections = -1;   // -1: DefaultHttpMaxConnections(open-file limit); 0: no limit
  RestrictedFeatures restricted;  // --http-restricted-api
  bool status_page = true;        // --allow-status-page (Nereid's own; docs/operations.md)
};

struct GrpcOptions {
  bool allow = true;
  GrpcServerOptions server;  // address, port, threads, keepalive, TLS, compression
};

struct MetricsCliOptions {
  bool allow = true;      // --allow-metrics
  MetricsOptions server;  // port, address (defaults to --http-address), CPU, interval, config
  std::vector<std::string> warnings;  // --metrics-config settings Triton would ignore too
};

struct AppOptions {
  ServerOptions server;
  HttpOptions http;
  GrpcOptions grpc;
  MetricsCliOptions metrics;
  logging::Options log;
  // The response cache: --cache-config <name>,<k>=<v> merged per name, or the deprecated
  // --response-cache-byte-size N as local,size=N. Empty name: no cache.
  std::string cache_name;
  std::map<std::string, std::string> cache_settings;
  std::string cache_directory = "/opt/tritonserver/caches";  // --cache-directory (unused)
  std::vector<std::string> cache_warnings;  // logged at start-up (the deprecated flag)
  std::vector<std::string> trace_warnings;  // logged at start-up (deprecated --trace-* flags)
  // Flags accepted for compatibility whose feature this build does not have yet; each is named
  // in a start-up warning so nobody believes it took effect.
  std::vector<std::string> ignored_flags;
  bool help_requested = false;
  std::string help_text;
};

// The HTTP I/O thread count when --http-thread-count is not given: the CPUs this process may run
// on, at least 2 (so one thread stays free while another runs a model inline, ADR 0003) and at
// most Triton's default of 8. docs/adr/0009-http-thread-count.md explains why.
int DefaultHttpThreadCount();

// The gRPC completion-queue thread count when --grpc-infer-thread-count is not given: Triton's 2,
// or 1 when this process may run on one CPU only (two threads on one CPU hand the poller back and
// forth: ~30% more CPU per unary call, bench/README.md). docs/adr/0009-http-thread-count.md.
int DefaultGrpcInferThreadCount();

// Parses argv. On error the Status message is one line suitable for stderr.
StatusOr<AppOptions> ParseCommandLine(int argc, const char* const* argv,
                                      const std::string& default_backend_directory);

}  // namespace nereid
