// HttpServer: HTTP/1.1 over TCP on N I/O threads, each running an event loop (Boost.Asio
// io_context) of its own; every loop accepts, and each connection is served by one loop from
// accept to close (http_io_loops.h: the least loaded loop not inside a handler). Keep-alive,
// pipelining (requests are read ahead and answered in order), `Connection: close`, `Expect:
// 100-continue`, a body limit (also for chunked bodies, capped at 65 536 chunks) and graceful
// shutdown. Handlers never run concurrently for one connection and must not block: they answer
// later through their HttpResponder from any thread.
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
// Thread-safety: Create/CreateGuest/Start/StopAccepting/Stop/destructor (of a server and its
// guests) from one controlling thread;
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
  int thread_count = 8;             // I/O threads, one event loop each
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

  // A guest: `handler` served on a listening socket of its own (options.address and port, its
  // own limits and timeouts) by this server's event loops and I/O threads, so it starts no thread
  // (options.thread_count and thread_name are ignored). It accepts once both are started. Its
  // Stop() drains its own connections only; when this server stops first, the guest stops with
  // it (its later Stop() just closes what is left). Used for the metrics port.
  StatusOr<std::unique_ptr<HttpServer>> CreateGuest(const HttpServerOptions& options,
                                                    HttpHandler handler);

  ~HttpServer();  // Stop(0) if still running
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  Status Start();
  int port() const;  // the bound port (useful with port 0)

  // Stops listening at once (new clients are refused), even while an I/O thread is busy in a
  // handler; connections already open keep being served.
  void StopAccepting();

  // Stops accepting, closes idle connections, lets requests in flight be answered and written,
  // then closes their connections. After `timeout` whatever is left is closed and its replies
  // dropped. Returns true when everything drained in time. Joins the I/O threads.
  bool Stop(std::chrono::milliseconds timeout);

  struct Impl;  // defined in http_server.cc (with http_session.h, the files that see Boost)

 private:
  explicit HttpServer(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;  // a guest's is also held by its host until the host is destroyed
};

}  // namespace nereid
