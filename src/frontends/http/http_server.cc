// HttpServer: binding, the acceptor (admission at the connection limit, evicting the longest-idle
// connection, handing each connection to an I/O loop), the I/O threads (http_io_loops.h) and
// graceful shutdown. Each connection is a Session (http_session.h).
#include "frontends/http/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "common/log_throttle.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "frontends/http/http_io_loops.h"
#include "frontends/http/http_session.h"
#include "frontends/http/http_wire.h"
#include "frontends/http/router.h"

namespace nereid {

namespace beast = boost::beast;
namespace net = boost::asio;
using http_detail::Clock;
using http_detail::IoLoops;
using http_detail::LoopSeat;
using http_detail::RunGuarded;
using http_detail::ServerCore;
using http_detail::Session;
using http_detail::Socket;
using http_detail::tcp;

namespace {

// An accepted descriptor on its way to its loop: closed if the loop drops it (stopped first).
class HandedOffFd {
 public:
  explicit HandedOffFd(int fd) : fd_(fd) {}
  HandedOffFd(HandedOffFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  HandedOffFd& operator=(HandedOffFd&&) = delete;
  ~HandedOffFd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int Take() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

enum class Admission { kServe, kServeAfterEviction, kRefuse, kDrop };

}  // namespace

struct HttpServer::Impl {
  Impl(const HttpServerOptions& options, HttpHandler handler)
      : Impl(std::make_shared<IoLoops>(std::max(1, options.thread_count)), options,
             std::move(handler)) {}
  // A guest on `host`'s loops: no threads of its own.
  Impl(const std::shared_ptr<Impl>& host_impl, const HttpServerOptions& options,
       HttpHandler handler)
      : Impl(host_impl->core.loops, options, std::move(handler)) {
    guest = true;
    host = host_impl;
  }

  // Every loop accepts on its own descriptor of the one listening socket, so a loop busy in a
  // handler (a model run inline) delays no accept: another loop takes the connection.
  struct Acceptor {
    explicit Acceptor(net::io_context& loop) : socket(loop), backoff(loop) {}
    tcp::acceptor socket;
    net::steady_timer backoff;
    LogThrottle failures{std::chrono::seconds(10)};
  };

  Status Bind();
  void CloseGate();
  void DoAccept(size_t loop);
  beast::error_code AcceptQueued(int listening_fd) EXCLUDES(accept_mu);
  void Admit(HandedOffFd&& fd) REQUIRES(accept_mu);
  void Serve(int fd, LoopSeat&& seat, bool refuse);

  ServerCore core;
  std::vector<std::unique_ptr<Acceptor>> acceptors;  // acceptors[i] on loop i, used there only
  std::atomic<bool> accepting{true};                 // false from StopAccepting() on
  // Held from accept(2) to the connection's admission, so that every loop admits connections in
  // the kernel's order and counts every one accepted before (--http-max-connections).
  Mutex accept_mu;
  bool accept_stopped = false;  // StopAccepting() ran (controlling thread)
  tcp protocol = tcp::v4();     // the listening socket's, for accepted ones
  int port = 0;
  bool started = false;
  bool stopped = false;
  bool guest = false;
  std::weak_ptr<Impl> host;  // a guest's
  // A host's guests, kept until the host is destroyed: their sessions' handlers may still run on
  // this server's threads after a guest's own Stop() returned.
  std::vector<std::shared_ptr<Impl>> guests;

 private:
  Impl(std::shared_ptr<IoLoops> loops, const HttpServerOptions& options, HttpHandler handler);
};

HttpServer::Impl::Impl(std::shared_ptr<IoLoops> loops, const HttpServerOptions& options,
                       HttpHandler handler)
    : core(std::move(loops)) {
  for (size_t i = 0; i < core.loops->size(); ++i) {
    acceptors.push_back(std::make_unique<Acceptor>(core.loops->loop(i)));
  }
  core.options = options;
  core.handler = std::move(handler);
}

void HttpServer::Impl::CloseGate() {
  MutexLock lock(core.gate->mu);
  core.gate->open = false;
}

Status HttpServer::Impl::Bind() {
  const HttpServerOptions& o = core.options;
  const std::string host = HostFromAddress(o.address);
  const std::string where = o.address + ":" + std::to_string(o.port);
  if (o.port < 0 || o.port > 65535) return InvalidArgument("invalid HTTP port " + where);
  beast::error_code ec;
  net::ip::address ip = net::ip::make_address(host, ec);
  if (ec) {
    net::io_context resolver_context;  // a synchronous resolve, before any loop runs
    tcp::resolver resolver(resolver_context);
    auto results = resolver.resolve(host, std::to_string(o.port), ec);
    if (ec || results.empty()) {
      return InvalidArgument("unable to resolve HTTP address '" + o.address + "'");
    }
    ip = results.begin()->endpoint().address();
  }
  const tcp::endpoint endpoint(ip, static_cast<unsigned short>(o.port));
  tcp::acceptor& acceptor = acceptors[0]->socket;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec && o.reuse_port) {
    acceptor.set_option(net::detail::socket_option::boolean<SOL_SOCKET, SO_REUSEPORT>(true), ec);
  }
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) return Unavailable("Socket '" + where + "' already in use: " + ec.message());
  // Connections are taken with accept4(2) once the socket is readable (AcceptQueued): it must
  // not block. The flag belongs to the socket, so every dup below shares it.
  if (!ec) acceptor.non_blocking(true, ec);
  if (ec) return Unavailable("Socket '" + where + "' already in use: " + ec.message());
  port = acceptor.local_endpoint().port();
  protocol = endpoint.protocol();
  // Every other loop accepts on a descriptor of its own for the same socket.
  for (size_t i = 1; i < acceptors.size(); ++i) {
    const int fd = ::dup(acceptor.native_handle());
    if (fd >= 0) acceptors[i]->socket.assign(endpoint.protocol(), fd, ec);
    if (fd < 0 || ec) {
      const std::string reason = fd < 0 ? std::strerror(errno) : ec.message();
      if (fd >= 0) ::close(fd);
      return Unavailable("Socket '" + where +
                         "' cannot be shared by the HTTP I/O threads: " + reason);
    }
  }
  return Status::Ok();
}

void HttpServer::Impl::DoAccept(size_t loop) {
  Acceptor& a = *acceptors[loop];
  a.socket.async_wait(tcp::acceptor::wait_read, [this, &a, loop](beast::error_code ec) {
    if (!accepting.load(std::memory_order_acquire) || !a.socket.is_open()) return;
    if (!ec) ec = AcceptQueued(a.socket.native_handle());
    if (ec) {
      // Typically out of file descriptors: back off instead of spinning on the error, and say so
      // once per interval rather than on every retry.
      if (const uint64_t n = a.failures.Allow(Clock::now()); n > 0) {
        LOG_WARNING("HTTP accept failed ({} time(s) since the last report): {}", n, ec.message());
      }
      a.backoff.expires_after(std::chrono::milliseconds(100));
      a.backoff.async_wait([this, &a, loop](beast::error_code) {
        if (accepting.load(std::memory_order_acquire) && a.socket.is_open()) DoAccept(loop);
      });
      return;
    }
    DoAccept(loop);
  });
}

// Accepts what the kernel has queued (a few at a time, then waits again, so one loop does not
// take a whole burst), each admitted before the next is accepted by any loop.
beast::error_code HttpServer::Impl::AcceptQueued(int listening_fd) {
  constexpr int kAcceptsPerWake = 16;
  for (int i = 0; i < kAcceptsPerWake; ++i) {
    MutexLock lock(accept_mu);
    const int fd = ::accept4(listening_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return {};
      return beast::error_code(errno, boost::system::system_category());
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    Admit(HandedOffFd(fd));
  }
  return {};
}

// At the connection limit, the connection idle the longest is closed to make room; when none is
// idle the new client is answered 503 (a few at a time: beyond that its socket just closes).
// The connection then moves to the loop IoLoops::Assign picks (Serve).
void HttpServer::Impl::Admit(HandedOffFd&& fd) {
  constexpr size_t kRefusalsInFlight = 64;
  const size_t limit = core.options.max_connections;
  std::shared_ptr<Session> victim;
  size_t open = 0;
  if (limit > 0) {
    MutexLock lock(core.mu);
    open = core.sessions.size() + core.handing_off.load(std::memory_order_relaxed);
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
  Admission admission = Admission::kServe;
  if (limit > 0 && open >= limit) {
    admission = victim != nullptr                  ? Admission::kServeAfterEviction
                : open < limit + kRefusalsInFlight ? Admission::kRefuse
                                                   : Admission::kDrop;
  }
  if (admission == Admission::kDrop) return;  // the socket closes here
  if (victim != nullptr) {
    net::post(victim->executor(),
              [victim] { RunGuarded(*victim, [&] { victim->EvictIfIdle(); }); });
  }
  LoopSeat seat = core.loops->Assign();
  net::io_context& loop = core.loops->loop(seat.index());
  const bool refuse = admission == Admission::kRefuse;
  core.handing_off.fetch_add(1, std::memory_order_relaxed);  // until Serve has registered it
  if (loop.get_executor().running_in_this_thread()) {
    return Serve(fd.Take(), std::move(seat), refuse);
  }
  net::post(loop, [this, fd = std::move(fd), seat = std::move(seat), refuse]() mutable {
    Serve(fd.Take(), std::move(seat), refuse);
  });
}

// On the connection's loop: its socket and session are created here (a loop's sockets are
// touched by its own thread only: http_io_loops.h). Once registered (Start/Refuse), Stop() may
// post Drain() to the session at any time.
void HttpServer::Impl::Serve(int fd, LoopSeat&& seat, bool refuse) {
  net::io_context& loop = core.loops->loop(seat.index());
  beast::error_code ec;
  Socket socket(loop.get_executor());
  socket.assign(protocol, fd, ec);
  if (ec) {
    ::close(fd);
  } else {
    auto session = std::make_shared<Session>(std::move(socket), &core, std::move(seat));
    RunGuarded(*session, [&] {
      if (refuse) return session->Refuse();
      session->Start();
    });
  }
  core.handing_off.fetch_sub(1, std::memory_order_relaxed);
}

HttpServer::HttpServer(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  if (impl_ != nullptr) Stop(std::chrono::milliseconds(0));
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(const HttpServerOptions& options,
                                                         HttpHandler handler) {
  if (options.thread_count <= 0) return InvalidArgument("HTTP thread count must be positive");
  if (options.max_input_size == 0) return InvalidArgument("--http-max-input-size must be > 0");
  auto impl = std::make_shared<Impl>(options, std::move(handler));
  NEREID_RETURN_IF_ERROR(impl->Bind());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

StatusOr<std::unique_ptr<HttpServer>> HttpServer::CreateGuest(const HttpServerOptions& options,
                                                              HttpHandler handler) {
  if (impl_->guest) return InvalidArgument("a guest HTTP server cannot host another");
  if (impl_->stopped) return Unavailable("HTTP server was stopped");
  if (options.max_input_size == 0) return InvalidArgument("--http-max-input-size must be > 0");
  auto impl = std::make_shared<Impl>(impl_, options, std::move(handler));
  NEREID_RETURN_IF_ERROR(impl->Bind());
  impl_->guests.push_back(impl);
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
  if (s.guest) {
    // Its accepts run on the host's threads; stopping waits on them.
    std::shared_ptr<Impl> host = s.host.lock();
    if (host == nullptr || !host->started || host->stopped) {
      return Unavailable("the HTTP server hosting this one is not running");
    }
  }
  s.started = true;
  for (size_t i = 0; i < s.acceptors.size(); ++i) {
    net::post(s.core.loops->loop(i), [&s, i] { s.DoAccept(i); });
  }
  if (!s.guest) s.core.loops->Start(s.core.options.thread_name);
  return Status::Ok();
}

int HttpServer::port() const { return impl_->port; }

void HttpServer::StopAccepting() {
  Impl& s = *impl_;
  if (s.accept_stopped) return;
  s.accept_stopped = true;
  s.accepting.store(false, std::memory_order_release);
  beast::error_code ignored;
  // (A guest whose host stopped first: nothing runs its loops any more.)
  if (!s.started || s.stopped || s.core.loops->stopped()) {
    for (auto& a : s.acceptors) a->socket.close(ignored);
    return;
  }
  // Stop listening now, whatever the loops are doing (one may be running a model inline): the
  // acceptors' descriptors share one socket, and shutting it down touches no Asio state (a
  // loop's sockets are its own thread's, http_io_loops.h). Connecting clients are refused from
  // here on; each loop's pending accept ends with an error, and the loop closes its descriptor
  // when it next runs.
  ::shutdown(s.acceptors[0]->socket.native_handle(), SHUT_RD);
  for (size_t i = 0; i < s.acceptors.size(); ++i) {
    net::post(s.core.loops->loop(i), [a = s.acceptors[i].get()] {
      beast::error_code ignored;
      a->socket.close(ignored);
      a->backoff.cancel();
    });
  }
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
    if (s.started && !s.core.loops->stopped()) {
      drained = lock.WaitFor(s.core.drained, timeout,
                             [&s]() REQUIRES(s.core.mu) { return s.core.sessions.empty(); });
    }
  }
  // A guest leaves the loop to its host: a connection that did not drain in time (a reply still
  // being written) ends when the host stops; its core stays alive in the host's `guests` meanwhile.
  if (!s.guest) {
    s.core.loops->Stop();
    for (const auto& g : s.guests) g->CloseGate();
  }
  s.CloseGate();
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
