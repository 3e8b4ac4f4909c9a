// HttpServer: binding, the acceptor (admission at the connection limit, evicting the longest-idle
// connection), the I/O threads and graceful shutdown. Each connection is a Session
// (http_session.h).
#include "frontends/http/http_server.h"

#include <future>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/log_throttle.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "common/thread_name.h"
#include "frontends/http/http_session.h"
#include "frontends/http/http_wire.h"
#include "frontends/http/router.h"

namespace nereid {

namespace beast = boost::beast;
namespace net = boost::asio;
using http_detail::Clock;
using http_detail::RunGuarded;
using http_detail::ServerCore;
using http_detail::Session;
using http_detail::Socket;
using http_detail::tcp;

struct HttpServer::Impl {
  explicit Impl(const HttpServerOptions& options, HttpHandler handler)
      : core(std::max(1, options.thread_count)),
        acceptor(net::make_strand(core.ioc)),
        accept_backoff(acceptor.get_executor()),
        work(net::make_work_guard(core.ioc)) {
    core.options = options;
    core.handler = std::move(handler);
  }

  Status Bind();
  void DoAccept();
  void Admit(Socket socket);
  void RunLoop();

  ServerCore core;
  tcp::acceptor acceptor;                                 // on its own strand
  net::steady_timer accept_backoff;                       // same strand
  LogThrottle accept_failures{std::chrono::seconds(10)};  // same strand
  net::executor_work_guard<net::io_context::executor_type> work;
  std::vector<std::thread> threads;
  int port = 0;
  bool started = false;
  bool stopped = false;
};

Status HttpServer::Impl::Bind() {
  const HttpServerOptions& o = core.options;
  const std::string host = HostFromAddress(o.address);
  const std::string where = o.address + ":" + std::to_string(o.port);
  if (o.port < 0 || o.port > 65535) return InvalidArgument("invalid HTTP port " + where);
  beast::error_code ec;
  net::ip::address ip = net::ip::make_address(host, ec);
  if (ec) {
    tcp::resolver resolver(core.ioc);
    auto results = resolver.resolve(host, std::to_string(o.port), ec);
    if (ec || results.empty()) {
      return InvalidArgument("unable to resolve HTTP address '" + o.address + "'");
    }
    ip = results.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(ip, static_cast<unsigned short>(o.port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec && o.reuse_port) {
    acceptor.set_option(net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
  }
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("Socket '" + where + "' already in use: " + ec.message());
  port = acceptor.local_endpoint().port();
  return Status::Ok();
}

void HttpServer::Impl::DoAccept() {
  acceptor.async_accept(net::make_strand(core.ioc), [this](beast::error_code ec, Socket socket) {
    if (!acceptor.is_open()) return;
    if (ec) {
      // Typically out of file descriptors: back off instead of spinning on the error, and say so
      // once per interval rather than on every retry.
      if (const uint64_t n = accept_failures.Allow(Clock::now()); n > 0) {
        LOG_WARNING("HTTP accept failed ({} time(s) since the last report): {}", n, ec.message());
      }
      accept_backoff.expires_after(std::chrono::milliseconds(100));
      accept_backoff.async_wait([this](beast::error_code) {
        if (acceptor.is_open()) DoAccept();
      });
      return;
    }
    socket.set_option(tcp::no_delay(true), ec);
    Admit(std::move(socket));
    DoAccept();
  });
}

// At the connection limit, the connection idle the longest is closed to make room; when none is
// idle the new client is answered 503 (a few at a time: beyond that its socket just closes).
void HttpServer::Impl::Admit(Socket socket) {
  constexpr size_t kRefusalsInFlight = 64;
  const size_t limit = core.options.max_connections;
  std::shared_ptr<Session> victim;
  size_t open = 0;
  if (limit > 0) {
    MutexLock lock(core.mu);
    open = core.sessions.size();
    if (open >= limit) {
      int64_t oldest = 0;
      for (const auto& [raw, session] : core.sessions) {
        const int64_t since = session->idle_since();
        if (since != 0 && (oldest == 0 || since < oldest)) {
          oldest = since;
          victim = session;
        }
      }
      if (victim != nullptr && !victim->ClaimIdle(oldest)) victim.reset();
    }
  }
  auto session = std::make_shared<Session>(std::move(socket), &core);
  // Started on its own strand: once registered, Stop() may post Drain() to it at any time.
  if (limit == 0 || open < limit) {
    net::post(session->executor(), [session] { RunGuarded(*session, [&] { session->Start(); }); });
  } else if (victim != nullptr) {
    net::post(victim->executor(),
              [victim] { RunGuarded(*victim, [&] { victim->EvictIfIdle(); }); });
    net::post(session->executor(), [session] { RunGuarded(*session, [&] { session->Start(); }); });
  } else if (open < limit + kRefusalsInFlight) {
    net::post(session->executor(), [session] { RunGuarded(*session, [&] { session->Refuse(); }); });
  }
}

// An exception escaping a handler would end the thread (and, uncaught, the process): log it and
// keep serving. Connections catch what their parser throws themselves (Session::Parse).
void HttpServer::Impl::RunLoop() {
  for (;;) {
    try {
      core.ioc.run();
      return;
    } catch (const std::exception& e) {
      LOG_ERROR("HTTP I/O thread caught an exception and keeps serving: {}", e.what());
    } catch (...) {
      LOG_ERROR("HTTP I/O thread caught an unknown exception and keeps serving");
    }
  }
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  if (impl_ != nullptr) Stop(std::chrono::milliseconds(0));
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& options,
                                                         HttpHandler handler) {
  if (options.thread_count <= 0) return InvalidArgument("HTTP thread count must be positive");
  if (options.max_input_size == 0) return InvalidArgument("--http-max-input-size must be > 0");
  auto impl = std::make_unique<Impl>(options, std::move(handler));
  NEREID_RETURN_IF_ERROR(impl->Bind());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& options,
                                                         std::shared_ptr<const HttpRouter> router) {
  return Create(options, [router = std::move(router)](HttpRequest& request,
                                                      std::shared_ptr<HttpResponder> responder) {
    router->Dispatch(request, std::move(responder));
  });
}

Status HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started) return AlreadyExists("HTTP server is already running");
  if (s.stopped) return Unavailable("HTTP server was stopped");
  s.started = true;
  net::post(s.acceptor.get_executor(), [&s] { s.DoAccept(); });
  for (int i = 0; i < std::max(1, s.core.options.thread_count); ++i) {
    s.threads.emplace_back([&s] {
      NameThisThread(s.core.options.thread_name);
      s.RunLoop();
    });
  }
  return Status::Ok();
}

int HttpServer::port() const { return impl_->port; }

void HttpServer::StopAccepting() {
  Impl& s = *impl_;
  if (!s.started || s.stopped) {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    return;
  }
  // The acceptor lives on its strand; closing there cannot race with an accept completion.
  std::promise<void> done;
  net::post(s.acceptor.get_executor(), [&s, &done] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.accept_backoff.cancel();
    done.set_value();
  });
  done.get_future().wait();
}

bool HttpServer::Stop(std::chrono::milliseconds timeout) {
  Impl& s = *impl_;
  if (s.stopped) return true;
  StopAccepting();
  bool drained = true;
  {
    UniqueLock lock(s.core.mu);
    s.core.stopping = true;
    for (auto& [raw, session] : s.core.sessions) {
      net::post(session->executor(),
                [session = session] { RunGuarded(*session, [&] { session->Drain(); }); });
    }
    if (s.started) {
      drained = lock.WaitFor(s.core.drained, timeout,
                             [&s]() REQUIRES(s.core.mu) { return s.core.sessions.empty(); });
    }
  }
  s.work.reset();
  s.core.ioc.stop();
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
  {
    MutexLock lock(s.core.gate->mu);
    s.core.gate->open = false;
  }
  std::unordered_map<const Session*, std::shared_ptr<Session>> left;
  {
    MutexLock lock(s.core.mu);
    left.swap(s.core.sessions);
  }
  drained = drained && left.empty();
  s.stopped = true;
  if (!drained) LOG_WARNING("HTTP server stopped with {} connection(s) still open", left.size());
  return drained;
}

}  // namespace nereid
