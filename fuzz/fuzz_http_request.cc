// The HTTP request path end to end: the input is the bytes a client writes on one connection
// (one or several pipelined requests, any method, path, headers, chunking, compression, body).
// LLVMFuzzerInitialize starts the real HttpServer with Triton's routes over an InferenceServer
// serving identity-backend models (plain, BYTES, dynamically batched, sequence) from a temporary
// repository, on loopback; each input is written on a fresh connection, whose write side is then
// shut, and every reply is read until the server closes it. A server that never closes the
// connection is reported as a crash (a hang is a bug too).
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include "common/logging.h"
#include "core/server/inference_server.h"
#include "frontends/http/handlers.h"
#include "frontends/http/http_server.h"

namespace {

constexpr int kCloseTimeoutMs = 20000;

std::unique_ptr<nereid::InferenceServer> g_server;
std::unique_ptr<nereid::HttpServer> g_http;
int g_port = 0;

void WriteModel(const std::filesystem::path& repo, const std::string& name,
                const std::string& config) {
  std::filesystem::create_directories(repo / name / "1");
  std::ofstream(repo / name / "config.pbtxt") << "name: \"" << name << "\"\n" << config;
  std::ofstream(repo / name / "1" / ".keep");
}

std::string Io(const char* type) {
  return std::string("input [{ name: \"INPUT0\" data_type: ") + type +
         " dims: [-1] }]\noutput [{ name: \"OUTPUT0\" data_type: " + type + " dims: [-1] }]\n";
}

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "fuzz_http_request: %s\n", what);
  std::abort();
}

std::filesystem::path MakeRepository() {
  char dir[] = "/tmp/nereid-fuzz-http-XXXXXX";
  if (mkdtemp(dir) == nullptr) Fail("mkdtemp failed");
  const std::filesystem::path repo(dir);
  WriteModel(repo, "identity_fp32", "backend: \"identity\"\nmax_batch_size: 8\n" + Io("TYPE_FP32"));
  WriteModel(repo, "identity_bytes",
             "backend: \"identity\"\nmax_batch_size: 0\n" + Io("TYPE_STRING"));
  WriteModel(repo, "batched",
             "backend: \"identity\"\nmax_batch_size: 8\n" + Io("TYPE_INT32") +
                 "dynamic_batching { max_queue_delay_microseconds: 100 }\n");
  WriteModel(repo, "sequence",
             "backend: \"identity\"\nmax_batch_size: 4\n" + Io("TYPE_FP32") +
                 "sequence_batching { max_sequence_idle_microseconds: 1000000 }\n");
  return repo;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  nereid::logging::Options log;
  log.info = false;
  log.warning = false;
  log.error = false;
  if (!nereid::logging::Init(log).ok()) Fail("logging::Init failed");

  const std::filesystem::path repo = MakeRepository();
  nereid::ServerOptions options;
  options.model_repositories = {repo.string()};
  options.backend_directory = NEREID_FUZZ_BACKEND_DIR;
  options.exit_timeout_secs = 1;
  auto server = nereid::InferenceServer::Create(options);
  std::filesystem::remove_all(repo);  // the models are loaded; nothing reads the files again
  if (!server.ok()) Fail(server.status().message().c_str());
  g_server = std::move(server).value();

  nereid::HttpServerOptions http;
  http.address = "127.0.0.1";
  http.port = 0;
  http.thread_count = 2;
  http.max_input_size = 1 << 20;
  http.max_header_size = 16 * 1024;
  auto created = nereid::StartTritonHttpServer(http, g_server.get());
  if (!created.ok()) Fail(created.status().message().c_str());
  g_http = std::move(created).value();
  g_port = g_http->port();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(g_port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = -1;
  // Thousands of connections a second exhaust loopback's ephemeral ports if closed connections
  // linger in TIME_WAIT; the reset below avoids that, and a busy moment is retried.
  for (int attempt = 0; fd < 0; ++attempt) {
    fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) Fail("socket failed");
    if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) break;
    close(fd);
    fd = -1;
    if (attempt == 100) Fail("connect failed");
    usleep(100 * 1000);
  }
  // The server may answer (and close) before reading everything: a failed send ends the input.
  for (size_t sent = 0; sent < size;) {
    const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;
    sent += static_cast<size_t>(n);
  }
  shutdown(fd, SHUT_WR);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(kCloseTimeoutMs);
  char buf[65536];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) Fail("the server did not close the connection after the client's EOF");
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;  // closed (or reset): every reply has been read
  }
  // The server closed first; a reset (linger 0) instead of a FIN leaves no TIME_WAIT behind.
  linger reset{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
  close(fd);
  return 0;
}
