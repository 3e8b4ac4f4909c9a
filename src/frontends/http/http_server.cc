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
#include <cstring>
#include <deque>
#include <future>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/completion_batch.h"
#include "common/log_throttle.h"
#include "common/logging.h"
#include "common/thread_annotations.h"
#include "common/thread_name.h"
#include "frontends/http/http_session_state.h"
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
using Clock = std::chrono::steady_clock;

constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr size_t kReadBufferBytes = 16 * 1024;  // per connection, kept across requests

class Session;

// Closed once the I/O threads are gone; responders check it before posting.
struct Gate {
  explicit Gate(net::io_context* context) : ioc(context) {}
  Mutex mu;
  bool open GUARDED_BY(mu) = true;
  net::io_context* ioc;  // set once; valid while open
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
    MutexLock lock(p.gate->mu);
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
  Mutex mu;
  std::condition_variable drained;
  bool stopping GUARDED_BY(mu) = false;
  std::unordered_map<const Session*, std::shared_ptr<Session>> sessions GUARDED_BY(mu);

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

// Which deadline a connection is under (HttpServerOptions: idle, header and read timeouts).
enum class Phase { kNone, kIdle, kHeader, kBody };

std::chrono::milliseconds PhaseTimeout(const HttpServerOptions& o, Phase phase) {
  switch (phase) {
    case Phase::kIdle:
      return o.idle_timeout;
    case Phase::kHeader:
      return o.header_timeout;
    case Phase::kBody:
      return o.read_timeout;
    case Phase::kNone:
      break;
  }
  return std::chrono::milliseconds(0);
}

// The shortest enabled timeout: the timer never waits longer than this (see timer_).
std::chrono::milliseconds TimerTick(const HttpServerOptions& o) {
  std::chrono::milliseconds tick(0);
  for (auto t : {o.idle_timeout, o.header_timeout, o.read_timeout}) {
    if (t.count() > 0 && (tick.count() == 0 || t < tick)) tick = t;
  }
  return tick;
}

// One connection. Every member function runs on the session's strand, but for the two atomics
// the acceptor reads when it looks for an idle connection to evict.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket&& socket, ServerCore* core)
      : executor_(socket.get_executor()),
        stream_(std::move(socket)),
        core_(core),
        // Header and trailer sections must fit in the buffer: Beast checks the header against
        // header_limit but keeps reading a trailer section for as long as the buffer grows.
        buffer_(std::max<size_t>(core->options.max_header_size, 1024)),
        timer_(executor_) {
    // Beast reads min(64 KiB, max(512, free capacity)) per receive; from an empty buffer a
    // request of a few KiB took three receives (header, then body in growing pieces).
    buffer_.reserve(std::min(kReadBufferBytes, buffer_.max_size()));
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

  // Registers the session and serves it; when the server is stopping, the socket just closes
  // with this object.
  void Start() {
    if (Register()) DoRead();
  }

  // Registers the session, answers 503 and closes: the server is at its connection limit and no
  // connection is idle.
  void Refuse() {
    if (!Register()) return;
    QueueError(503, "the server is at its limit of " +
                        std::to_string(core_->options.max_connections) +
                        " open HTTP connections (--http-max-connections); try again later");
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

  // Steady-clock nanoseconds since the connection went idle; 0 while it is not idle.
  int64_t idle_since() const { return idle_since_.load(std::memory_order_relaxed); }
  // Claims this idle connection for eviction, so two accepts never pick the same one.
  bool ClaimIdle(int64_t seen) {
    return seen != 0 && idle_since_.compare_exchange_strong(seen, 0, std::memory_order_relaxed);
  }
  // Closes the connection if it is still idle (a request may have started since it was claimed).
  void EvictIfIdle() {
    if (closed() || phase_ != Phase::kIdle) return;
    LOG_VERBOSE(1, "HTTP connection closed to make room for a new one (--http-max-connections)");
    Close();
  }

  // Something this connection's handlers ran threw: its state can no longer be trusted, so it
  // is closed (its replies are lost); the I/O thread and every other connection carry on.
  void OnException(std::string_view what) {
    LOG_ERROR("HTTP connection closed after an exception in its handler: {}", what);
    Close();
  }

  void OnResponse(uint64_t seq, HttpResponse&& response) {
    if (closed() || seq < write_seq_ || seq - write_seq_ >= pending_.size()) return;
    pending_[seq - write_seq_].response.emplace(std::move(response));
    DoWrite();
  }

 private:
  struct Pending {
    bool keep_alive = true;
    unsigned version = 11;
    bool head = false;
    std::optional<HttpResponse> response;
    std::shared_ptr<CancelToken> cancel;  // the request's (HttpRequest::cancel_token)
  };

  // The client is gone: requests still owed a reply are cancelled (queued ones are dropped by
  // their scheduler, running ones see it through IsCancelled).
  void CancelOwed() {
    for (Pending& p : pending_) {
      if (p.cancel != nullptr && !p.response) p.cancel->Cancel();
    }
  }

  bool closed() const { return state_.state() == SessionState::kClosed; }
  bool read_closed() const { return state_.state() != SessionState::kOpen; }
  void Move(SessionState to);
  void EndReading();  // no more requests on this connection (no-op when already so)
  bool Register();
  void DoRead();
  void ReadSome();
  void OnRead(beast::error_code ec, size_t bytes);
  void Parse();
  size_t PrepareHeader();
  bool OnHeaderDone();
  void OnMessage();
  void OnReadError(beast::error_code ec);
  void FailRead(int code, std::string_view message);
  void Dispatch();
  void QueueError(int code, std::string_view message);
  void DoWrite();
  void OnWrite(beast::error_code ec, bool close_after);
  // A response with a body stream (HttpBodyStream): the head and first chunk, then each piece as
  // it is pushed, then the last chunk; OnWrite follows as for any response.
  void StartStream(HttpResponse& response, bool close_after);
  void PumpStream();
  void OnStreamWrite(beast::error_code ec);
  void AppendStreamPiece(std::string_view piece);  // one chunk, or raw bytes for HTTP/1.0
  void Linger();
  void LingerRead();
  void MaybeClose();
  void Close();
  void SetPhase(Phase phase);
  void ArmTimer();
  void OnTimer(uint64_t generation);
  void OnDeadline();

  Executor executor_;
  beast::tcp_stream stream_;
  ServerCore* core_;
  beast::flat_buffer buffer_;
  std::optional<bhttp::request_parser<bhttp::string_body>> parser_;
  std::function<void(uint64_t, beast::string_view, beast::error_code&)> chunk_callback_;
  uint64_t chunks_ = 0;
  bool chunk_limit_hit_ = false;
  bool header_done_ = false;  // the current parser has its whole header
  Clock::time_point
      recv_start_{};               // first read of the current request (HttpRequest::recv_start_ns)
  bool framing_checked_ = false;   // the complete header went through PrepareHeader's check
  bool framing_conflict_ = false;  // it had both Transfer-Encoding: chunked and Content-Length
  uint64_t next_seq_ = 0;          // sequence number of the next request read
  uint64_t write_seq_ = 0;         // sequence number of pending_.front()
  std::deque<Pending> pending_;    // read, not yet written; references stay valid on push_back
  std::string write_header_;
  std::vector<net::const_buffer> write_buffers_;
  std::shared_ptr<HttpBodyStream> body_stream_;  // the response being streamed, if any
  std::string stream_out_;                       // chunks being written
  bool stream_writing_ = false;
  bool stream_done_ = false;  // the last chunk is in stream_out_
  bool stream_close_after_ = false;
  bool stream_chunked_ = true;  // false for an HTTP/1.0 client: raw bytes, then close
  std::array<char, 4096> linger_buffer_;
  SessionLifecycle state_;  // moved only through Move (http_session_state.h)
  bool reading_ = false;    // a request is being read (a receive may be outstanding)
  bool writing_ = false;
  bool draining_ = false;
  bool registered_ = false;
  // Deadlines. The timer is re-armed lazily: its expiry is never later than now plus the
  // shortest timeout, so moving the deadline later (every request) costs a clock read only.
  net::steady_timer timer_;
  Phase phase_ = Phase::kNone;
  Clock::time_point deadline_ = Clock::time_point::max();
  bool timer_waiting_ = false;
  uint64_t timer_generation_ = 0;
  bool timed_out_ = false;  // a header or read timeout closed the receiving side
  std::atomic<int64_t> idle_since_{0};
};

// Runs one of a session's handlers; whatever it throws closes that session only.
template <typename Fn>
void RunGuarded(Session& session, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    session.OnException(e.what());
  } catch (...) {
    session.OnException("an exception of unknown type");
  }
}

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
      } catch (...) {  // sent_ is set: nobody else would answer this request
        r = ErrorResponse(500, "building the reply failed");
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
    MutexLock lock(gate_->mu);
    if (!gate_->open) return;
    std::shared_ptr<Session> s = session_.lock();
    if (s == nullptr) return;
    if (CompletionBatch::Active()) {
      // Runs on an I/O thread when the batch ends; enters the session's strand there (inline
      // when no other thread holds it).
      auto shared = std::make_shared<std::decay_t<Fn>>(std::forward<Fn>(fn));
      QueueReply(gate_, [s = std::move(s), shared = std::move(shared)]() {
        const Executor ex = s->executor();
        net::dispatch(ex, [s, shared]() { RunGuarded(*s, [&] { (*shared)(*s); }); });
      });
      return;
    }
    const Executor ex = s->executor();
    net::post(ex, [s = std::move(s), fn = std::forward<Fn>(fn)]() mutable {
      RunGuarded(*s, [&] { fn(*s); });
    });
  }

  std::shared_ptr<Gate> gate_;
  std::weak_ptr<Session> session_;
  uint64_t seq_;
  std::atomic<bool> sent_{false};
};

void Session::Move(SessionState to) {
  if (Status s = state_.MoveTo(to); !s.ok()) LOG_ERROR("{}", s.message());
}

void Session::EndReading() {
  if (state_.state() == SessionState::kOpen) Move(SessionState::kReadClosed);
}

bool Session::Register() {
  MutexLock lock(core_->mu);
  if (core_->stopping) return false;
  core_->sessions.emplace(this, shared_from_this());
  registered_ = true;
  return true;
}

void Session::DoRead() {
  if (reading_ || read_closed() || draining_ ||
      pending_.size() >= static_cast<size_t>(std::max(1, core_->options.max_pipelined_requests))) {
    return;
  }
  reading_ = true;
  chunks_ = 0;
  chunk_limit_hit_ = false;
  header_done_ = false;
  framing_checked_ = false;
  framing_conflict_ = false;
  parser_.emplace();
  parser_->header_limit(static_cast<uint32_t>(core_->options.max_header_size));
  parser_->body_limit(core_->options.max_input_size);
  parser_->on_chunk_header(chunk_callback_);
  if (buffer_.size() > 0) {  // the next request has begun (pipelined)
    SetPhase(Phase::kHeader);
    return Parse();
  }
  SetPhase(pending_.empty() && !writing_ ? Phase::kIdle : Phase::kNone);
  ReadSome();
}

// Beast's async_read, unrolled so that every call into the parser is ours: an exception it
// throws (its containers throw on sizes they cannot hold) ends this connection, not the thread.
void Session::ReadSome() {
  const size_t room = buffer_.max_size() - buffer_.size();
  if (room == 0) {
    // Only a header or trailer section stays in the buffer (bodies are consumed as they come),
    // and Beast reports an oversized header itself.
    return FailRead(431, header_done_ ? "request trailer section exceeds the maximum allowed "
                                        "size of " +
                                            std::to_string(buffer_.max_size()) + " bytes"
                                      : "request header exceeds the maximum allowed size of " +
                                            std::to_string(buffer_.max_size()) + " bytes");
  }
  stream_.async_read_some(buffer_.prepare(beast::read_size(buffer_, 64 * 1024)),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            RunGuarded(*self, [&] { self->OnRead(ec, bytes); });
                          });
}

void Session::OnRead(beast::error_code ec, size_t bytes) {
  if (closed()) {
    reading_ = false;
    return;
  }
  if (timed_out_) {
    const bool header = !header_done_;
    return FailRead(408, header ? "request header not received within " +
                                      std::to_string(core_->options.header_timeout.count()) +
                                      " ms (--http-header-timeout-secs)"
                                : "request body stalled for " +
                                      std::to_string(core_->options.read_timeout.count()) +
                                      " ms (--http-read-timeout-secs)");
  }
  if (ec == net::error::eof) {
    if (parser_->got_some()) {
      parser_->put_eof(ec);  // a request cannot end at EOF: partial_message
    } else {
      ec = bhttp::error::end_of_stream;
    }
  }
  if (ec) return OnReadError(ec);
  if (recv_start_ == Clock::time_point{} && !parser_->got_some()) recv_start_ = Clock::now();
  buffer_.commit(bytes);
  if (!header_done_) {
    if (phase_ != Phase::kHeader) SetPhase(Phase::kHeader);
  } else {
    SetPhase(Phase::kBody);  // progress: the read timeout counts from the last receive
  }
  Parse();
}

void Session::Parse() {
  while (!parser_->is_done() && buffer_.size() > 0) {
    const size_t visible = header_done_ ? buffer_.size() : PrepareHeader();
    if (visible == 0) break;  // the parser waits until the header holds its framing fields
    beast::error_code ec;
    size_t used = 0;
    try {
      used = parser_->put(net::buffer(buffer_.data().data(), visible), ec);
    } catch (const std::exception& e) {
      LOG_VERBOSE(1, "HTTP request refused: the parser threw: {}", e.what());
      return FailRead(400, "malformed HTTP request: a header or trailer field is too large");
    }
    buffer_.consume(used);
    if (ec == bhttp::error::need_more) break;
    if (ec) return OnReadError(ec);
    if (!header_done_ && parser_->is_header_done()) {
      header_done_ = true;
      if (!parser_->is_done()) SetPhase(Phase::kBody);
      if (!OnHeaderDone()) return;  // paused until "100 Continue" is written
    } else if (used == 0) {
      break;
    }
  }
  if (parser_->is_done()) return OnMessage();
  ReadSome();
}

// RFC 9112 §6.3, around Beast (which refuses a request carrying both fields, and parses header
// fields as they arrive): until the header block is complete Beast sees only the lines before
// its first Content-Length or Transfer-Encoding field; then a Content-Length beside
// "Transfer-Encoding: chunked" is dropped so the body is read as chunked, and the connection
// closes after the reply, so no byte after that body can pass for another request. Returns how
// many buffered bytes Beast may parse now.
size_t Session::PrepareHeader() {
  const bool at_start = !parser_->got_some();
  const std::string_view pending(static_cast<const char*>(buffer_.data().data()), buffer_.size());
  const std::optional<size_t> end = HeaderBlockEnd(pending, at_start);
  if (!end) return FramingSafePrefix(pending, at_start);
  if (framing_checked_) return buffer_.size();
  framing_checked_ = true;
  std::optional<std::string> head = DropContentLengthWhenChunked(pending.substr(0, *end), at_start);
  if (!head) return buffer_.size();
  framing_conflict_ = true;
  std::string rest(pending.substr(*end));
  buffer_.consume(buffer_.size());
  auto room = buffer_.prepare(head->size() + rest.size());  // smaller than before: it fits
  std::memcpy(room.data(), head->data(), head->size());
  std::memcpy(static_cast<char*>(room.data()) + head->size(), rest.data(), rest.size());
  buffer_.commit(head->size() + rest.size());
  return buffer_.size();
}

// Answers "Expect: 100-continue" when nothing else is being written (so the interim response
// cannot interleave with a reply). Returns false when parsing waits for that write.
bool Session::OnHeaderDone() {
  const auto& req = parser_->get();
  const auto expect = req.find(bhttp::field::expect);
  const bool wants_continue =
      expect != req.end() && EqualsIgnoreCase(Sv(expect->value()), "100-continue");
  if (!wants_continue || parser_->is_done() || writing_ || !pending_.empty()) return true;
  static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
  writing_ = true;
  net::async_write(stream_, net::buffer(kContinue.data(), kContinue.size()),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     RunGuarded(*self, [&] {
                       self->writing_ = false;
                       if (ec || self->closed()) return self->Close();
                       self->Parse();
                     });
                   });
  return false;
}

void Session::OnMessage() {
  reading_ = false;
  SetPhase(Phase::kNone);
  Dispatch();
  DoRead();  // read ahead: pipelined requests are handled while earlier ones run
}

void Session::OnReadError(beast::error_code ec) {
  if (closed()) {
    reading_ = false;
    return;
  }
  if (chunk_limit_hit_) {
    FailRead(400, TooManyChunksText(core_->options.max_chunks));
  } else if (ec == bhttp::error::body_limit) {
    const auto& head = parser_->get();
    const auto icl = head.find("Inference-Header-Content-Length");
    const std::string icl_value = icl == head.end() ? "" : std::string(Sv(icl->value()));
    std::optional<uint64_t> size;
    if (!parser_->chunked() && parser_->content_length()) size = *parser_->content_length();
    FailRead(400, BodyTooLargeText(icl == head.end() ? nullptr : &icl_value, size,
                                   core_->options.max_input_size));
  } else if (ec == bhttp::error::header_limit) {
    FailRead(431, "request header exceeds the maximum allowed size of " +
                      std::to_string(core_->options.max_header_size) + " bytes");
  } else if (ec.category() == bhttp::make_error_code(bhttp::error::end_of_stream).category() &&
             ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message &&
             !draining_) {
    FailRead(400, "malformed HTTP request: " + ec.message());
  } else {
    reading_ = false;
    // End of stream or reset with replies owed: the client disconnected. A half-close counts
    // too: HTTP/1.1 clients do not half-close and then wait for replies in practice.
    if (!draining_ && !timed_out_) CancelOwed();
    EndReading();  // end of stream, reset, or a drain interrupted the read
    SetPhase(Phase::kNone);
    MaybeClose();
  }
}

// Ends reading on this connection with an error reply after the ones already owed.
void Session::FailRead(int code, std::string_view message) {
  reading_ = false;
  QueueError(code, message);
  MaybeClose();
}

void Session::Dispatch() {
  auto msg = parser_->release();
  const uint64_t seq = next_seq_++;
  Pending p;
  p.keep_alive = msg.keep_alive() && !draining_ && !framing_conflict_;
  p.version = msg.version();
  p.head = msg.method() == bhttp::verb::head;
  if (!p.keep_alive) EndReading();
  p.cancel = std::make_shared<CancelToken>();
  std::shared_ptr<CancelToken> cancel = p.cancel;
  pending_.push_back(std::move(p));

  HttpRequest request;
  request.cancel_token = std::move(cancel);
  request.method = ToMethod(msg.method());
  request.target = std::string(Sv(msg.target()));
  for (const auto& field : msg) {
    request.headers.Add(std::string(Sv(field.name_string())), std::string(Sv(field.value())));
  }
  request.body = std::make_shared<std::string>(std::move(msg.body()));
  if (recv_start_ != Clock::time_point{}) {
    request.recv_start_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(recv_start_.time_since_epoch())
            .count());
    recv_start_ = Clock::time_point{};  // the next request's first read sets it again
  }
  auto responder = std::make_shared<Responder>(core_->gate, weak_from_this(), seq);
  try {
    core_->handler(request, responder);
  } catch (const std::exception& e) {
    responder->Send(ErrorResponse(500, e.what()));
  } catch (...) {
    responder->Send(ErrorResponse(500, "the request handler failed"));
  }
}

void Session::QueueError(int code, std::string_view message) {
  EndReading();
  SetPhase(Phase::kNone);
  Pending p;
  p.keep_alive = false;
  p.response.emplace(ErrorResponse(code, message));
  p.response->close_connection = true;
  pending_.push_back(std::move(p));
  ++next_seq_;
  DoWrite();
}

void Session::DoWrite() {
  if (writing_ || closed() || pending_.empty() || !pending_.front().response) return;
  writing_ = true;
  Pending& p = pending_.front();
  HttpResponse& r = *p.response;
  const bool last = pending_.size() == 1 && (read_closed() || draining_) && !reading_;
  // An HTTP/1.0 client knows no chunked body: a streamed one ends with the connection.
  const bool close_after =
      r.close_connection || !p.keep_alive || last || (r.stream != nullptr && p.version < 11);
  WriteResponseHead(r, close_after, p.version, &write_header_);
  if (r.stream != nullptr) {
    if (!p.head) return StartStream(r, close_after);
    r.stream->Abandon();
  }
  const std::string& h = write_header_;
  write_buffers_.clear();
  write_buffers_.emplace_back(h.data(), h.size());
  if (!p.head) {
    r.body.ForEachBuffer(
        [this](std::string_view v) { write_buffers_.emplace_back(v.data(), v.size()); });
  }
  net::async_write(stream_, write_buffers_,
                   [self = shared_from_this(), close_after](beast::error_code ec, size_t) {
                     RunGuarded(*self, [&] { self->OnWrite(ec, close_after); });
                   });
}

void Session::OnWrite(beast::error_code ec, bool close_after) {
  writing_ = false;
  pending_.pop_front();
  ++write_seq_;
  if (ec || closed()) return Close();
  if (close_after) {
    EndReading();
    return Linger();
  }
  DoWrite();
  DoRead();
  if (reading_ && pending_.empty() && !writing_ && phase_ == Phase::kNone && buffer_.size() == 0 &&
      !parser_->got_some()) {
    SetPhase(Phase::kIdle);
  }
  MaybeClose();
}

void Session::StartStream(HttpResponse& response, bool close_after) {
  body_stream_ = response.stream;
  stream_close_after_ = close_after;
  stream_chunked_ = pending_.front().version >= 11;
  stream_done_ = false;
  stream_out_ = write_header_;
  response.body.ForEachBuffer([this](std::string_view v) { AppendStreamPiece(v); });
  stream_writing_ = true;  // the head goes first; pieces pushed meanwhile wait for it
  body_stream_->SetWaker([weak = weak_from_this(), gate = core_->gate]() {
    MutexLock lock(gate->mu);
    if (!gate->open) return;
    std::shared_ptr<Session> s = weak.lock();
    if (s == nullptr) return;
    const Executor ex = s->executor();
    net::post(ex, [s]() { RunGuarded(*s, [&] { s->PumpStream(); }); });
  });
  net::async_write(stream_, net::buffer(stream_out_),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     RunGuarded(*self, [&] { self->OnStreamWrite(ec); });
                   });
}

void Session::PumpStream() {
  if (body_stream_ == nullptr || stream_writing_ || stream_done_ || closed()) return;
  bool last = false;
  std::vector<std::string> pieces = body_stream_->Take(&last);
  stream_out_.clear();
  for (const std::string& piece : pieces) AppendStreamPiece(piece);
  if (last) {
    if (stream_chunked_) stream_out_.append(kLastChunk);
    stream_done_ = true;
  }
  if (stream_out_.empty() && stream_done_) return OnStreamWrite({});
  if (stream_out_.empty()) return;
  stream_writing_ = true;
  net::async_write(stream_, net::buffer(stream_out_),
                   [self = shared_from_this()](beast::error_code ec, size_t) {
                     RunGuarded(*self, [&] { self->OnStreamWrite(ec); });
                   });
}

void Session::AppendStreamPiece(std::string_view piece) {
  if (stream_chunked_) return AppendChunk(piece, &stream_out_);
  stream_out_.append(piece);
}

void Session::OnStreamWrite(beast::error_code ec) {
  stream_writing_ = false;
  if (ec || closed()) return Close();
  if (!stream_done_) return PumpStream();
  body_stream_.reset();
  OnWrite(ec, stream_close_after_);
}

// Half-close, then discard what the client still sends (e.g. the rest of an oversized body)
// for a moment, so the kernel does not answer it with a reset that destroys our reply.
void Session::Linger() {
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
  if (draining_ || reading_) return Close();
  Move(SessionState::kLingering);
  stream_.expires_after(kLingerTime);  // one deadline for the whole linger, however chatty
  LingerRead();
}

void Session::LingerRead() {
  stream_.async_read_some(net::buffer(linger_buffer_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            RunGuarded(*self, [&] {
                              if (ec || self->draining_) return self->Close();
                              self->LingerRead();
                            });
                          });
}

void Session::MaybeClose() {
  if (closed()) return;
  if ((read_closed() || draining_) && !reading_ && !writing_ && pending_.empty()) Close();
}

void Session::Close() {
  if (closed()) return;
  Move(SessionState::kClosed);
  CancelOwed();                                          // their replies can no longer be written
  if (body_stream_ != nullptr) body_stream_->Abandon();  // its producer may stop
  body_stream_.reset();
  SetPhase(Phase::kNone);
  timer_.cancel();  // its handler holds this session
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream_.socket().close(ignored);
  if (!registered_) return;
  MutexLock lock(core_->mu);
  core_->sessions.erase(this);
  if (core_->sessions.empty()) core_->drained.notify_all();
}

void Session::SetPhase(Phase phase) {
  phase_ = phase;
  const auto timeout = PhaseTimeout(core_->options, phase);
  if (timeout.count() <= 0) {
    deadline_ = Clock::time_point::max();
    idle_since_.store(0, std::memory_order_relaxed);
    return;
  }
  const auto now = Clock::now();
  deadline_ = now + timeout;
  idle_since_.store(phase == Phase::kIdle ? now.time_since_epoch().count() : 0,
                    std::memory_order_relaxed);
  if (!timer_waiting_ && !closed()) ArmTimer();
}

void Session::ArmTimer() {
  const auto tick = Clock::now() + TimerTick(core_->options);
  timer_.expires_at(std::min(deadline_, tick));
  timer_waiting_ = true;
  timer_.async_wait(
      [self = shared_from_this(), generation = ++timer_generation_](beast::error_code) {
        RunGuarded(*self, [&] { self->OnTimer(generation); });
      });
}

void Session::OnTimer(uint64_t generation) {
  if (generation != timer_generation_) return;
  timer_waiting_ = false;
  if (closed() || deadline_ == Clock::time_point::max()) return;
  if (Clock::now() < deadline_) return ArmTimer();
  OnDeadline();
}

void Session::OnDeadline() {
  const Phase phase = phase_;
  SetPhase(Phase::kNone);
  if (phase == Phase::kIdle) {
    LOG_VERBOSE(1, "HTTP connection closed after {} ms idle (--http-idle-timeout-secs)",
                core_->options.idle_timeout.count());
    return Close();
  }
  // A header or body is overdue: stop receiving; the outstanding receive ends at once and
  // answers 408 (OnRead).
  timed_out_ = true;
  beast::error_code ignored;
  stream_.socket().shutdown(tcp::socket::shutdown_receive, ignored);
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
  void Admit(tcp::socket socket);
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
  acceptor.async_accept(net::make_strand(core.ioc), [this](beast::error_code ec,
                                                           tcp::socket socket) {
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
void HttpServer::Impl::Admit(tcp::socket socket) {
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
