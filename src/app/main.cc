// nereid: start-up, serving and graceful shutdown.
//
// SIGINT/SIGTERM (and SIGHUP, which rescans the repositories in POLL mode) are blocked in every
// thread and taken synchronously here with sigwait, so no work happens in a signal handler.
// Shutdown order: stop accepting connections, let inferences in flight finish (up to
// --exit-timeout-secs), write their replies, unload models, exit 0.
#include <signal.h>
#include <unistd.h>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/lsan_interface.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "app/cache_setup.h"
#include "app/command_line.h"
#include "app/file_limit.h"
#include "app/metrics_endpoint.h"
#include "app/process_environment.h"
#include "common/logging.h"
#include "core/server/inference_server.h"
#include "core/stats/library_pages.h"
#include "core/stats/process_memory.h"
#include "frontends/grpc/grpc_server.h"
#include "frontends/http/handlers.h"
#include "frontends/http/http_server.h"
#include "frontends/metrics/metrics_service.h"

namespace {

// After the shutdown deadline, the HTTP server still gets this long to write the replies of the
// requests that were answered UNAVAILABLE at the deadline.
constexpr std::chrono::milliseconds kReplyGrace{1000};

std::string DefaultBackendDirectory() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return "backends";
  return (exe.parent_path() / "backends").string();
}

int Run(int argc, char** argv) {
  nereid::SetLibraryEnvironmentDefaults();  // before any thread starts
  const uint64_t open_files = nereid::RaiseOpenFileLimit();
  auto parsed = nereid::ParseCommandLine(argc, argv, DefaultBackendDirectory());
  if (!parsed.ok()) {
    std::cerr << "error: " << parsed.status().message() << " (see --help)\n";
    return 1;
  }
  nereid::AppOptions options = std::move(parsed).value();
  if (options.help_requested) {
    std::cout << options.help_text;
    return 0;
  }
  if (nereid::Status s = nereid::logging::Init(options.log); !s.ok()) {
    std::cerr << "error: " << s.message() << "\n";
    return 1;
  }
  for (const auto& flag : options.ignored_flags) {
    LOG_WARNING("option {} is accepted for Triton compatibility but has no effect in this build",
                flag);
  }

  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGHUP);                    // POLL mode: rescan the repositories now
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);  // inherited by every thread created below

  for (const auto& w : options.metrics.warnings) LOG_WARNING("{}", w);
  const auto started = std::chrono::steady_clock::now();
  // Created before the models load: summaries (when enabled) observe every model version.
  std::unique_ptr<nereid::MetricsService> metrics;
  if (options.metrics.allow) {
    auto created = nereid::MetricsService::Create(options.metrics.server);
    if (!created.ok()) {
      LOG_ERROR("failed to start Metrics Service: {}", created.status().message());
      return 1;
    }
    metrics = std::move(created).value();
    options.server.latency_observers = metrics->LatencyObservers();
  }
  for (const auto& w : options.cache_warnings) LOG_WARNING("{}", w);
  for (const auto& w : options.trace_warnings) LOG_WARNING("{}", w);
  if (!options.cache_name.empty()) {
    auto cache = nereid::MakeResponseCache(options.cache_name, options.cache_settings);
    if (!cache.ok()) {
      LOG_ERROR("{}", cache.status().message());
      return 1;
    }
    options.server.response_cache = std::move(cache).value();
    LOG_INFO("Response cache '{}' enabled", options.cache_name);
  }
  options.server.release_library_pages_after_load = true;
  auto server = nereid::InferenceServer::Create(options.server);
  if (!server.ok()) {
    LOG_ERROR("{}", server.status().message());
    return 1;
  }
  std::unique_ptr<nereid::HttpServer> http;
  if (options.http.allow) {
    nereid::HttpServerOptions ho;
    ho.address = options.http.address;
    ho.port = options.http.port;
    ho.thread_count = options.http.thread_count;
    ho.max_input_size = static_cast<size_t>(options.http.max_input_size);
    ho.reuse_port = options.http.reuse_port;
    ho.restricted = options.http.restricted;
    ho.status_page = options.http.status_page;
    ho.idle_timeout = std::chrono::seconds(options.http.idle_timeout_secs);
    ho.header_timeout = std::chrono::seconds(options.http.header_timeout_secs);
    ho.read_timeout = std::chrono::seconds(options.http.read_timeout_secs);
    ho.max_connections = options.http.max_connections >= 0
                             ? static_cast<size_t>(options.http.max_connections)
                             : nereid::DefaultHttpMaxConnections(open_files);
    auto created = nereid::StartTritonHttpServer(ho, server->get());
    if (!created.ok()) {
      LOG_ERROR("failed to start HTTP service: {}", created.status().message());
      return 1;
    }
    http = std::move(created).value();
    LOG_INFO("Started HTTPService at {}:{}", options.http.address, http->port());
    LOG_VERBOSE(1, "HTTP: at most {} connections (open-file limit {}), idle timeout {} s",
                ho.max_connections, open_files, options.http.idle_timeout_secs);
  }
  std::unique_ptr<nereid::GrpcServer> grpc;
  if (options.grpc.allow) {
    auto created = nereid::GrpcServer::Create(options.grpc.server, server->get());
    if (!created.ok()) {
      LOG_ERROR("failed to start GRPC service: {}", created.status().message());
      return 1;
    }
    grpc = std::move(created).value();
    LOG_INFO("Started GRPCInferenceService at {}:{}", grpc->address(), grpc->port());
    LOG_VERBOSE(1, "gRPC: {} completion-queue thread(s)", options.grpc.server.infer_thread_count);
  }
  if (metrics) {
    if (nereid::Status s = metrics->Serve(server->get(), nereid::HttpMetricsEndpoint(http.get()));
        !s.ok()) {
      LOG_ERROR("failed to start Metrics Service: {}", s.message());
      return 1;
    }
    LOG_INFO("Started Metrics Service at {}:{}", options.metrics.server.address, metrics->port());
  }
  // Start-up is over: give back what it ran once (the libraries' initialisation code, ONNX
  // Runtime's kernel registration; core/stats/library_pages.h) and the allocator's free memory.
  const nereid::ReleasedLibraryPages released = nereid::ReleaseReadOnlyLibraryPages();
  nereid::ReturnFreeMemory();
  LOG_VERBOSE(1, "start-up pages released: {} read-only segments, {} MiB of address space",
              released.ranges, released.bytes >> 20);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - started)
                      .count();
  LOG_INFO("server is ready after {} ms", ms);

  int sig = 0;
  for (;;) {
    sigwait(&signals, &sig);
    if (sig != SIGHUP) break;
    if (!(*server)->PollRepositoryNow()) {
      LOG_INFO("SIGHUP ignored: the repository is rescanned only with --model-control-mode=poll");
    }
  }
  LOG_INFO("received signal {}, stopping (exit timeout {} s)", sig,
           options.server.exit_timeout_secs);
  // One deadline for the whole shutdown: inferences in flight, gRPC calls and the HTTP replies
  // still being written all share --exit-timeout-secs.
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options.server.exit_timeout_secs);
  const auto remaining = [deadline] {
    return std::max(std::chrono::milliseconds(0),
                    std::chrono::duration_cast<std::chrono::milliseconds>(
                        deadline - std::chrono::steady_clock::now()));
  };
  // Requests a backend could hold forever (a decoupled model that never sends FINAL) end first:
  // the gRPC shutdown below waits for the streams that carry them.
  (*server)->NoticeStop();
  if (http) http->StopAccepting();
  if (metrics) metrics->Stop();
  // gRPC calls and streams in progress get until the deadline; the rest are cancelled.
  if (grpc) grpc->StopAccepting(std::chrono::system_clock::now() + remaining());
  const bool drained = (*server)->Stop(deadline);
  // The replies of requests answered at the deadline (UNAVAILABLE) still get a moment to go out.
  if (http) http->Stop(std::max(remaining(), kReplyGrace));
  http.reset();
  grpc.reset();  // before the models go: no gRPC thread may call the server afterwards
  if (!drained) {
    // A backend is still executing: destroying the server would unload its code under it.
    // Leave as Triton does ("exiting immediately"), without running any destructor.
    LOG_INFO("stopped (executions still running were abandoned)");
    spdlog::shutdown();
    std::_Exit(0);
  }
  server->reset();
  LOG_INFO("stopped");
  return 0;
}

// Leaves with `code` without running static destructors. Run has already destroyed everything of
// Nereid's own; what is left are backend libraries' threads that never stop (ONNX Runtime's
// environment thread outlives its Ort::Env), which read library statics that exit() would free
// under them (ASan saw that thread read a freed ONNX Runtime string during exit).
[[noreturn]] void Leave(int code) {
  spdlog::shutdown();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
#if defined(__SANITIZE_ADDRESS__)
  __lsan_do_leak_check();  // LeakSanitizer's own check runs at exit, which is skipped
#endif
  std::_Exit(code);
}

}  // namespace

int main(int argc, char** argv) {
  int code = 1;
  try {
    code = Run(argc, argv);
  } catch (const std::exception& e) {  // a last resort: every known failure is a Status
    std::cerr << "fatal: " << e.what() << "\n";
  }
  Leave(code);
}
