// HttpServer: HTTP/1.1 over TCP on one event loop (Boost.Asio io_context) run by N threads; each
// connection is served on its own strand. Keep-alive, pipelining (requests are read ahead and
// answered in order), `Connection: close`, `Expect: 100-continue`, a body limit (also for
// chunked bodies, capped at 65 536 chunks) and graceful shutdown. Handlers never run
// concurrently for one connection and must not block: they answer later through their
// HttpResponder from any thread.
//
// Defences (docs/security.md): the header and the chunked trailer section are each limited to
// max_header_size (431); an idle connection is closed after idle_timeout; a request header must
// arrive within header_timeout of its first byte and a body may not stall for read_timeout (408);
// at max_connections the longest-idle connection is closed to make room, and when none is idle
// the new client is answered 503; an exception from any connection closes that connection only.
//
// Usage (src/app/main.cc):
//   auto http = StartTritonHttpServer(options, inference_server);  // handlers.h: Triton's routes
//   ... http->port() ...
//   http->StopAccepting();            // at shutdown: no new connections
//   inference_server->Stop();         // in-flight inferences finish and post their replies
//   http->Stop(timeout);              // replies are written, connections closed
// or, with your own handler: Create(options, handler) -> Start() -> Stop().
//
// Thread-safety: Create/Start/StopAccepting/Stop/destructor from one controlling thread;
// port() from any thread. Every method but the destructor is safe to call after Stop().
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/restricted_features.h"
#include "frontends/http/http_types.h"
#include "nereid/status.h"

namespace nereid {

class HttpRouter;

struct HttpServerOptions {
  std::string address = "0.0.0.0";  // IPv4, IPv6 ("::1", "[::1]", Triton's "ipv6:[::1]") or a name
  int port = 8000;                  // 0 binds an ephemeral port: see port()
  int thread_count = 8;             // threads running the event loop
  std::string thread_name = "http-io";       // their name (common/thread_name.h)
  size_t max_input_size = 64 * 1024 * 1024;  // request body limit, also after decompression
  bool reuse_port = false;                   // SO_REUSEPORT
  size_t max_header_size = 64 * 1024;
  uint64_t max_chunks = 65536;      // chunked transfer-encoding: more chunks than this answers 400
  int max_pipelined_requests = 16;  // per connection, being handled or waiting to be written
  // Timeouts; zero disables one. idle: nothing received or owed on a kept-alive connection.
  // header: from a request's first byte to the end of its header. read: the longest pause
  // between two receives of a body.
  std::chrono::milliseconds idle_timeout = std::chrono::seconds(120);
  std::chrono::milliseconds header_timeout = std::chrono::seconds(30);
  std::chrono::milliseconds read_timeout = std::chrono::seconds(60);
  size_t max_connections = 0;     // open connections served at once; 0: no limit
  RestrictedFeatures restricted;  // used by Triton's routes (handlers.h)
  bool status_page = true;        // --allow-status-page (handlers.h)
};

class HttpServer {
 public:
  // Binds and listens (so port() is known and a busy port fails here) but does not serve until
  // Start(). `handler` is called on I/O threads for every complete request.
  static StatusOr<std::unique_ptr<HttpServer>> Create(const HttpServerOptions& options,
                                                      HttpHandler handler);
  // Same, dispatching through `router`, which must outlive the server.
  static StatusOr<std::unique_ptr<HttpServer>> Create(const HttpServerOptions& options,
                                                      std::shared_ptr<const HttpRouter> router);

  ~HttpServer();  // Stop(0) if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status Start();
  int port() const;  // the bound port (useful with port 0)

  // Closes the listening socket; connections already open keep being served.
  void StopAccepting();

  // Stops accepting, closes idle connections, lets requests in flight be answered and written,
  // then closes their connections. After `timeout` whatever is left is closed and its replies
  // dropped. Returns true when everything drained in time. Joins the I/O threads.
  bool Stop(std::chrono::milliseconds timeout);

  struct Impl;  // defined in http_server.cc (with http_session.h, the files that see Boost)

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace nereid
