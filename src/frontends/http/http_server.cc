// The only file that includes Boost.Beast / Boost.Asio.
//
// Lifetimes: sessions are owned by the server's registry from accept to close (and by the
// handlers of their pending operations). Responders hold a weak reference plus the shared Gate;
// the gate closes once the I/O threads are joined, so no responder posts into a dead loop.
#include "frontends/http/http_server.h"

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <condition_variable>
#include <deque>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/completion_batch.h"
#include "common/logging.h"
#include "frontends/http/http_wire.h"
#include "frontends/http/router.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Executor = net::any_io_executor;  // a strand: sockets are accepted onto their own

constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kReadBufferBytes = 16 * 1024;  // per connection, kept across requests

class Session;

// Closed once the I/O threads are gone; responders check it before posting.
struct Gate {
  explicit Gate(net::io_context* context) : ioc(context) {}
  std::mutex mu;
  bool open = true;      // guarded by mu
  net::io_context* ioc;  // valid while open
};

// Replies completed on this thread inside a CompletionBatch (an executor finishing a batch),
// per server, handed to the I/O threads in one post when the batch ends: one wake-up per batch
// instead of one per reply, which on a shared core also meant two context switches per reply.
struct PendingReplies {
  std::shared_ptr<Gate> gate;
  std::vector<std::function<void()>> tasks;
};
thread_local std::vector<PendingReplies> pending_replies;

void FlushReplies() {
  std::vector<PendingReplies> all;
  all.swap(pending_replies);
  for (PendingReplies& p : all) {
    std::lock_guard<std::mutex> lock(p.gate->mu);
    if (!p.gate->open) continue;
    net::post(*p.gate->ioc, [tasks = std::move(p.tasks)]() {
      for (const auto& task : tasks) task();
    });
  }
}

void QueueReply(const std::shared_ptr<Gate>& gate, std::function<void()> task) {
  if (pending_replies.empty()) CompletionBatch::Defer(&FlushReplies);
  for (PendingReplies& p : pending_replies) {
    if (p.gate == gate) return p.tasks.push_back(std::move(task));
  }
  pending_replies.push_back({gate, {}});
  pending_replies.back().tasks.push_back(std::move(task));
}

// State shared by the server and its sessions. Outlives every I/O thread.
struct ServerCore {
  HttpServerOptions options;
  HttpHandler handler;
  net::io_context ioc;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>(&ioc);
  std::mutex mu;
  std::condition_variable drained;
  bool stopping = false;                                                  // guarded by mu
  std::unordered_map<const Session*, std::shared_ptr<Session>> sessions;  // guarded by mu

  explicit ServerCore(int threads) : ioc(threads) {}
};

HttpMethod ToMethod(bhttp::verb v) {
  switch (v) {
    case bhttp::verb::get:
      return HttpMethod::kGet;
    case bhttp::verb::head:
      return HttpMethod::kHead;
    case bhttp::verb::post:
      return HttpMethod::kPost;
    case bhttp::verb::put:
      return HttpMethod::kPut;
    case bhttp::verb::delete_:
      return HttpMethod::kDelete;
    case bhttp::verb::patch:
      return HttpMethod::kPatch;
    case bhttp::verb::options:
      return HttpMethod::kOptions;
    default:
      return HttpMethod::kOther;
  }
}

std::string_view Sv(beast::string_view s) { return std::string_view(s.data(), s.size()); }

// One connection. Every member function runs on the session's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, ServerCore* core)
      : executor_(socket.get_executor()), stream_(std::move(socket)), core_(core) {
    // Beast reads min(64 KiB, max(512, free capacity)) per receive; from an empty buffer a
    // request of a few KiB took three receives (header, then body in growing pieces).
    buffer_.reserve(kReadBufferBytes);
    chunk_callback_ = [this](uint64_t size, beast::string_view, beast::error_code& ec) {
      // The terminating zero-size chunk is not counted.
      if (size > 0 && ++chunks_ > core_->options.max_chunks) {
        chunk_limit_hit_ = true;
        ec = bhttp::error::bad_chunk;
      }
    };
  }

  const Executor& executor() const { return executor_; }

  // True on an I/O thread currently running this session's handlers.
  bool InStrand() const {
    const auto* strand = executor_.target<net::strand<net::io_context::executor_type>>();
    return strand != nullptr && strand->running_in_this_thread();
  }

  void Start() {
    {
      std::lock_guard<std::mutex> lock(core_->mu);
      if (core_->stopping) return;  // the socket closes with this object
      core_->sessions.emplace(this, shared_from_this());
    }
    DoRead();
  }

  // Stop taking requests; close once the ones already taken are written.
  void Drain() {
    draining_ = true;
    if (reading_) {
      beast::error_code ignored;
      if (pending_.empty()) {
        Close();
      } else {
        stream_.socket().shutdown(tcp::socket::shutdown_receive, ignored);
      }
    }
    MaybeClose();
  }

  void OnResponse(uint64_t seq, HttpResponse&& response) {
    if (closed_ || seq < write_seq_ || seq - write_seq_ >= pending_.size()) return;
    pending_[seq - write_seq_].response.emplace(std::move(response));
    DoWrite();
  }

 private:
  struct Pending {
    bool keep_alive = true;
    unsigned version = 11;
    bool head = false;
    std::optional<HttpResponse> response;
  };

  void DoRead();
  void OnHeader(beast::error_code ec);
  void ReadBody();
  void OnBody(beast::error_code ec);
  void OnReadError(beast::error_code ec);
  void Dispatch();
  void QueueError(int code, std::string_view message);
  void DoWrite();
  void OnWrite(beast::error_code ec, bool close_after);
  void Linger();
  void LingerRead();
  void MaybeClose();
  void Close();

  Executor executor_;
  beast::tcp_stream stream_;
  ServerCore* core_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::function<void(uint64_t, beast::string_view, beast::error_code&)> chunk_callback_;
  uint64_t chunks_ = 0;
  bool chunk_limit_hit_ = false;
  uint64_t next_seq_ = 0;        // sequence number of the next request read
  uint64_t write_seq_ = 0;       // sequence number of pending_.front()
  std::deque<Pending> pending_;  // read, not yet written; references stay valid on push_back
  std::string write_header_;
  std::vector<net::const_buffer> write_buffers_;
  std::array<char, 4096> linger_buffer_;
  bool reading_ = false;
  bool writing_ = false;
  bool read_closed_ = false;  // no more requests on this connection
  bool draining_ = false;
  bool closed_ = false;
};

// Posts responses to the session's strand; see HttpResponder for the contract.
class Responder : public HttpResponder {
 public:
  Responder(std::shared_ptr<Gate> gate, std::weak_ptr<Session> session, uint64_t seq)
      : gate_(std::move(gate)), session_(std::move(session)), seq_(seq) {}

  ~Responder() override {
    if (!sent_.exchange(true)) {
      Post([seq = seq_](Session& s) {
        s.OnResponse(seq, ErrorResponse(500, "request was dropped without a response"));
      });
    }
  }

  void Send(HttpResponse&& response) override {
    if (sent_.exchange(true)) return;
    Post([seq = seq_, r = std::move(response)](Session& s) mutable {
      s.OnResponse(seq, std::move(r));
    });
  }

  void SendDeferred(std::function<HttpResponse()> make) override {
    if (sent_.exchange(true)) return;
    Post([seq = seq_, make = std::move(make)](Session& s) {
      HttpResponse r;
      try {
        r = make();
      } catch (const std::exception& e) {
        r = ErrorResponse(500, e.what());
      }
      s.OnResponse(seq, std::move(r));
    });
  }

 private:
  template <typename Fn>
  void Post(Fn&& fn) {
    // Already on the session's strand (a reply sent from inside the handler, e.g. after inline
    // execution): finish it here, with no trip through the scheduler, which could hand it to
    // another I/O thread and wake that thread.
    if (std::shared_ptr<Session> s = session_.lock(); s != nullptr && s->InStrand()) {
      return fn(*s);
    }
    std::lock_guard<std::mutex> lock(gate_->mu);
    if (!gate_->open) return;
    std::shared_ptr<Session> s = session_.lock();
    if (s == nullptr) return;
    if (CompletionBatch::Active()) {
      // Runs on an I/O thread when the batch ends; enters the session's strand there (inline
      // when no other thread holds it).
      auto shared = std::make_shared<std::decay_t<Fn>>(std::forward<Fn>(fn));
      QueueReply(gate_, [s = std::move(s), shared = std::move(shared)]() {
        const Executor ex = s->executor();
        net::dispatch(ex, [s, shared]() { (*shared)(*s); });
      });
      return;
    }
    const Executor ex = s->executor();
    net::post(ex, [s = std::move(s), fn = std::forward<Fn>(fn)]() mutable { fn(*s); });
  }

  std::shared_ptr<Gate> gate_;
  std::weak_ptr<Session> session_;
  uint64_t seq_;
  std::atomic<bool> sent_{false};
};

void Session::DoRead() {
  if (reading_ || read_closed_ || draining_ || closed_ ||
      pending_.size() >= static_cast<size_t>(std::max(1, core_->options.max_pipelined_requests))) {
    return;
  }
  reading_ = true;
  chunks_ = 0;
  chunk_limit_hit_ = false;
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(core_->options.max_header_size));
  parser_->body_limit(core_->options.max_input_size);
  parser_->on_chunk_header(chunk_callback_);
  bhttp::async_read_header(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnHeader(ec); });
}

void Session::OnHeader(beast::error_code ec) {
  if (ec) return OnReadError(ec);
  const auto& req = parser_->get();
  const auto expect = req.find(bhttp::field::expect);
  const bool wants_continue =
      expect != req.end() && EqualsIgnoreCase(Sv(expect->value()), "100-continue");
  if (!wants_continue || parser_->is_done() || writing_ || !pending_.empty()) return ReadBody();
  // Nothing else is being written, so the interim response cannot interleave with a reply.
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  writing_ = true;
  net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     self->writing_ = false;
                     if (ec) return self->Close();
                     self->ReadBody();
                   });
}

void Session::ReadBody() {
  bhttp::async_read(
      stream_, buffer_, *parser_,
      [self = shared_from_this()](beast::error_code ec, size_t) { self->OnBody(ec); });
}

void Session::OnBody(beast::error_code ec) {
  if (ec) return OnReadError(ec);
  reading_ = false;
  if (closed_) return;  // completed just before a drain closed the socket
  Dispatch();
  DoRead();  // read ahead: pipelined requests are handled while earlier ones run
}

void Session::OnReadError(beast::error_code ec) {
  reading_ = false;
  if (closed_) return;
  if (chunk_limit_hit_) {
    QueueError(400, "chunked request exceeds the maximum of " +
                        std::to_string(core_->options.max_chunks) + " chunks");
  } else if (ec == bhttp::error::body_limit) {
    QueueError(400, "request body exceeds the maximum allowed size of " +
                        std::to_string(core_->options.max_input_size) +
                        " bytes (--http-max-input-size)");
  } else if (ec == bhttp::error::header_limit) {
    QueueError(400, "request header exceeds the maximum allowed size of " +
                        std::to_string(core_->options.max_header_size) + " bytes");
  } else if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category() &&
             ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message &&
             !draining_) {
    QueueError(400, "malformed HTTP request: " + ec.message());
  } else {
    read_closed_ = true;  // end of stream, reset, or a drain interrupted the read
  }
  MaybeClose();
}

void Session::Dispatch() {
  auto msg = parser_->release();
  const uint64_t seq = next_seq_++;
  Pending p;
  p.keep_alive = msg.keep_alive() && !draining_;
  p.version = msg.version();
  p.head = msg.method() == bhttp::verb::head;
  if (!p.keep_alive) read_closed_ = true;
  pending_.push_back(std::move(p));

  HttpRequest request;
  request.method = ToMethod(msg.method());
  request.target = std::string(Sv(msg.target()));
  for (const auto& field : msg) {
    request.headers.Add(std::string(Sv(field.name_string())), std::string(Sv(field.value())));
  }
  request.body = std::make_shared<std::string>(std::move(msg.body()));
  auto responder = std::make_shared<Responder>(core_->gate, weak_from_this(), seq);
  try {
    core_->handler(request, responder);
  } catch (const std::exception& e) {
    responder->Send(ErrorResponse(500, e.what()));
  }
}

void Session::QueueError(int code, std::string_view message) {
  read_closed_ = true;
  Pending p;
  p.keep_alive = false;
  p.response.emplace(ErrorResponse(code, message));
  p.response->close_connection = true;
  pending_.push_back(std::move(p));
  ++next_seq_;
  DoWrite();
}

void Session::DoWrite() {
  if (writing_ || closed_ || pending_.empty() || !pending_.front().response) return;
  writing_ = true;
  Pending& p = pending_.front();
  HttpResponse& r = *p.response;
  const bool last = pending_.size() == 1 && (read_closed_ || draining_) && !reading_;
  const bool close_after = r.close_connection || !p.keep_alive || last;
  WriteResponseHead(r, close_after, p.version, &write_header_);
  const std::string& h = write_header_;
  write_buffers_.clear();
  write_buffers_.emplace_back(h.data(), h.size());
  if (!p.head) {
    r.body.ForEachBuffer(
        [this](std::string_view v) { write_buffers_.emplace_back(v.data(), v.size()); });
  }
  net::async_write(stream_, write_buffers_,
                   [self = shared_from_this(), close_after](beast::error_code ec, size_t) {
                     self->OnWrite(ec, close_after);
                   });
}

void Session::OnWrite(beast::error_code ec, bool close_after) {
  writing_ = false;
  pending_.pop_front();
  ++write_seq_;
  if (ec) return Close();
  if (close_after) {
    read_closed_ = true;
    return Linger();
  }
  DoWrite();
  DoRead();
  MaybeClose();
}

// Half-close, then discard what the client still sends (e.g. the rest of an oversized body)
// for a moment, so the kernel does not answer it with a reset that destroys our reply.
void Session::Linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (draining_ || reading_) return Close();
  stream_.expires_after(kLingerTime);  // one deadline for the whole linger, however chatty
  LingerRead();
}

void Session::LingerRead() {
  stream_.async_read_some(net::buffer(linger_buffer_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            if (ec || self->draining_) return self->Close();
                            self->LingerRead();
                          });
}

void Session::MaybeClose() {
  if (closed_) return;
  if ((read_closed_ || draining_) && !reading_ && !writing_ && pending_.empty()) Close();
}

void Session::Close() {
  if (closed_) return;
  closed_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
  std::lock_guard<std::mutex> lock(core_->mu);
  core_->sessions.erase(this);
  if (core_->sessions.empty()) core_->drained.notify_all();
}

}  // namespace

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

  ServerCore core;
  tcp::acceptor acceptor;            // on its own strand
  net::steady_timer accept_backoff;  // same strand
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
  acceptor.async_accept(net::make_strand(core.ioc),
                        [this](beast::error_code ec, tcp::socket socket) {
                          if (!acceptor.is_open()) return;
                          if (ec) {
                            // Typically out of file descriptors: back off instead of spinning on
                            // the error.
                            LOG_WARNING("HTTP accept failed: {}", ec.message());
                            accept_backoff.expires_after(std::chrono::milliseconds(100));
                            accept_backoff.async_wait([this](beast::error_code) {
                              if (acceptor.is_open()) DoAccept();
                            });
                            return;
                          }
                          socket.set_option(tcp::no_delay(true), ec);
                          std::make_shared<Session>(std::move(socket), &core)->Start();
                          DoAccept();
                        });
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
    s.threads.emplace_back([&s] { s.core.ioc.run(); });
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
    std::unique_lock<std::mutex> lock(s.core.mu);
    s.core.stopping = true;
    for (auto& [raw, session] : s.core.sessions) {
      net::post(session->executor(), [session = session] { session->Drain(); });
    }
    if (s.started) {
      drained = s.core.drained.wait_for(lock, timeout, [&s] { return s.core.sessions.empty(); });
    }
  }
  s.work.reset();
  s.core.ioc.stop();
  for (std::thread& t : s.threads) t.join();
  s.threads.clear();
  {
    std::lock_guard<std::mutex> lock(s.core.gate->mu);
    s.core.gate->open = false;
  }
  std::unordered_map<const Session*, std::shared_ptr<Session>> left;
  {
    std::lock_guard<std::mutex> lock(s.core.mu);
    left.swap(s.core.sessions);
  }
  drained = drained && left.empty();
  s.stopped = true;
  if (!drained) LOG_WARNING("HTTP server stopped with {} connection(s) still open", left.size());
  return drained;
}

}  // namespace nereid
