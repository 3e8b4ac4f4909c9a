// GrpcServer: Triton's GRPCInferenceService (and grpc.health.v1.Health) on an async gRPC server
// with one completion queue served by `infer_thread_count` threads. Frontends see no grpc++
// header through this file.
//
// Ownership: the caller keeps the InferenceServer alive until Stop() has returned.
// Thread-safety: StopAccepting and Stop are called from one thread (main), in that order.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "common/restricted_features.h"
#include "nereid/status.h"

namespace nereid {

class InferenceServer;

enum class GrpcCompression { kNone, kLow, kMedium, kHigh };

struct GrpcKeepaliveOptions {  // Triton's defaults; see `--grpc-keepalive-*`
  int keepalive_time_ms = 7200000;
  int keepalive_timeout_ms = 20000;
  bool keepalive_permit_without_calls = false;
  int http2_max_pings_without_data = 2;
  int http2_min_recv_ping_interval_without_data_ms = 300000;
  int http2_max_ping_strikes = 2;
  int max_connection_age_ms = 0;        // 0: unset
  int max_connection_age_grace_ms = 0;  // 0: unset
};

struct GrpcSslOptions {
  bool use_ssl = false;
  bool use_mutual_auth = false;  // require and verify a client certificate
  std::string server_cert;       // PEM file paths
  std::string server_key;
  std::string root_cert;
};

struct GrpcServerOptions {
  std::string address = "0.0.0.0";  // also "[::1]" or "ipv6:[::1]"
  int port = 8001;                  // 0: any free port (see port())
  int infer_thread_count = 2;
  bool reuse_port = false;
  GrpcKeepaliveOptions keepalive;
  GrpcSslOptions ssl;
  GrpcCompression response_compression = GrpcCompression::kNone;
  // --grpc-max-response-pool-size: responses of one ModelStreamInfer stream waiting to be written
  // before a decoupled model's sender blocks until the client reads (Triton's default: INT_MAX).
  int max_response_pool_size = INT32_MAX;
  int max_message_size = INT32_MAX;  // send and receive; protobuf's limit is 2 GB
  // --grpc-restricted-protocol: keys already carry the "triton-grpc-protocol-" prefix.
  RestrictedFeatures restricted;
};

class GrpcServer {
 public:
  // Binds, starts the completion-queue threads and returns a serving server.
  static StatusOr<std::unique_ptr<GrpcServer>> Create(const GrpcServerOptions& options,
                                                      InferenceServer* server);
  ~GrpcServer();  // Stop()

  GrpcServer(const GrpcServer&) = delete;
  GrpcServer& operator=(const GrpcServer&) = delete;

  int port() const;
  const std::string& address() const;  // host part as given to gRPC, e.g. "0.0.0.0" or "[::1]"

  // Refuses new calls and waits until `deadline` for the calls in progress (unary and streams);
  // those still running then are cancelled. Inference callbacks may still run afterwards.
  void StopAccepting(std::chrono::system_clock::time_point deadline);

  // Stops every thread. Results of inferences still running afterwards are dropped. Idempotent.
  void Stop();

 private:
  struct Impl;
  explicit GrpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// The "host:port" gRPC binds for Triton's --grpc-address forms ("0.0.0.0", "ipv6:[::1]", "::1").
std::string GrpcListenAddress(const std::string& address, int port);

}  // namespace nereid
