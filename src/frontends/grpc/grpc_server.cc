#include "frontends/grpc/grpc_server.h"

#include <absl/synchronization/mutex.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "common/logging.h"
#include "common/thread_name.h"
#include "frontends/grpc/grpc_call.h"

namespace nereid {

using grpc_frontend::CqEvent;
using grpc_frontend::GrpcShared;

struct GrpcServer::Impl {
  std::shared_ptr<GrpcShared> shared = std::make_shared<GrpcShared>();
  std::unique_ptr<grpc::ServerCompletionQueue> cq;
  std::unique_ptr<grpc::Server> server;
  std::vector<std::thread> threads;
  std::string host;
  int port = 0;
  bool shut_down = false;
  bool stopped = false;

  void Serve() {
    void* tag = nullptr;
    bool ok = false;
    while (cq->Next(&tag, &ok)) static_cast<CqEvent*>(tag)->OnEvent(ok);
  }
};

namespace {

StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return InvalidArgument("cannot read " + std::string(flag) + " file '" + path + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const GrpcSslOptions& ssl) {
  if (!ssl.use_ssl) return grpc::InsecureServerCredentials();
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  NEREID_ASSIGN_OR_RETURN(pair.cert_chain, ReadFile(ssl.server_cert, "--grpc-server-cert"));
  NEREID_ASSIGN_OR_RETURN(pair.private_key, ReadFile(ssl.server_key, "--grpc-server-key"));
  grpc::SslServerCredentialsOptions opts(
      ssl.use_mutual_auth ? GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY
                          : GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  if (!ssl.root_cert.empty()) {
    NEREID_ASSIGN_OR_RETURN(opts.pem_root_certs, ReadFile(ssl.root_cert, "--grpc-root-cert"));
  } else if (ssl.use_mutual_auth) {
    return InvalidArgument("--grpc-use-ssl-mutual needs --grpc-root-cert to verify clients");
  }
  opts.pem_key_cert_pairs.push_back(std::move(pair));
  return grpc::SslServerCredentials(opts);
}

void ApplyChannelArgs(const GrpcServerOptions& o, grpc::ServerBuilder* b) {
  const GrpcKeepaliveOptions& k = o.keepalive;
  b->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, k.keepalive_time_ms);
  b->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, k.keepalive_timeout_ms);
  b->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS,
                        k.keepalive_permit_without_calls ? 1 : 0);
  b->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, k.http2_max_pings_without_data);
  b->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                        k.http2_min_recv_ping_interval_without_data_ms);
  b->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, k.http2_max_ping_strikes);
  if (k.max_connection_age_ms > 0) {
    b->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, k.max_connection_age_ms);
  }
  if (k.max_connection_age_grace_ms > 0) {
    b->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, k.max_connection_age_grace_ms);
  }
  b->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, o.reuse_port ? 1 : 0);
  b->SetMaxReceiveMessageSize(o.max_message_size);
  b->SetMaxSendMessageSize(o.max_message_size);
  static constexpr grpc_compression_level kLevels[] = {
      GRPC_COMPRESS_LEVEL_NONE, GRPC_COMPRESS_LEVEL_LOW, GRPC_COMPRESS_LEVEL_MED,
      GRPC_COMPRESS_LEVEL_HIGH};
  b->SetDefaultCompressionLevel(kLevels[static_cast<int>(o.response_compression)]);
}

}  // namespace

std::string GrpcListenAddress(const std::string& address, int port) {
  std::string host = address;
  if (host.rfind("ipv6:", 0) == 0) host = host.substr(5);
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

StatusOr<std::unique_ptr<GrpcServer>> GrpcServer::Create(const GrpcServerOptions& options,
                                                         InferenceServer* server) {
  if (options.infer_thread_count < 1) {
    return InvalidArgument("--grpc-infer-thread-count must be at least 1");
  }
  // Debian's abseil is built without NDEBUG, so every absl::Mutex that gRPC locks also updated
  // abseil's lock-order graph for its deadlock detector (GraphCycles::GetId and the bookkeeping
  // around it: ~4% of the server's CPU on the unary ModelInfer path, bench/README.md). An abseil
  // built with NDEBUG never does this; nereid has no use for it in production.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  auto impl = std::make_unique<Impl>();
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                          Credentials(options.ssl));
  const std::string listen = GrpcListenAddress(options.address, options.port);
  impl->host = listen.substr(0, listen.rfind(':'));
  grpc::ServerBuilder builder;
  builder.AddListeningPort(listen, credentials, &impl->port);
  builder.RegisterService(&impl->shared->service);
  builder.RegisterService(&impl->shared->health);
  ApplyChannelArgs(options, &builder);
  impl->cq = builder.AddCompletionQueue();
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    if (impl->server) impl->server->Shutdown();
    if (impl->cq) impl->cq->Shutdown();
    return Unavailable("failed to listen for gRPC on " + listen +
                       " (address in use or not available)");
  }
  GrpcShared& shared = *impl->shared;
  shared.server = server;
  shared.cq = impl->cq.get();
  shared.restricted = options.restricted;
  shared.max_response_pool_size = std::max(1, options.max_response_pool_size);
  // Inline execution only while another completion-queue thread stays free (ADR 0003).
  shared.inline_slots.store(options.infer_thread_count - 1);
  grpc_frontend::ListenUnaryCalls(impl->shared);
  grpc_frontend::ListenModelInfer(impl->shared);
  grpc_frontend::ListenRepositoryCalls(impl->shared);
  grpc_frontend::ListenModelStreamInfer(impl->shared);
  for (int i = 0; i < options.infer_thread_count; ++i) {
    impl->threads.push_back(StartNamedThread("grpc-cq", [p = impl.get()] { p->Serve(); }));
  }
  return std::unique_ptr<GrpcServer>(new GrpcServer(std::move(impl)));
}

GrpcServer::GrpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

GrpcServer::~GrpcServer() { Stop(); }

int GrpcServer::port() const { return impl_->port; }
const std::string& GrpcServer::address() const { return impl_->host; }

void GrpcServer::StopAccepting(std::chrono::system_clock::time_point deadline) {
  if (impl_->shut_down) return;
  impl_->shut_down = true;
  impl_->shared->accepting.store(false);
  impl_->server->Shutdown(deadline);
}

void GrpcServer::Stop() {
  if (impl_->stopped) return;
  StopAccepting(std::chrono::system_clock::now());
  impl_->stopped = true;
  impl_->shared->gate.Close();  // no async operation starts from now on
  impl_->cq->Shutdown();
  for (std::thread& t : impl_->threads) t.join();  // they drain the queue first
  impl_->server.reset();
  impl_->cq.reset();
}

}  // namespace nereid
