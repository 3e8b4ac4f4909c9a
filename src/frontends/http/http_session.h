// Internal to nereid_http_server: one HTTP connection (Session) and the state it shares with the
// server (ServerCore, Gate). Only the transport's .cc files include this header (it sees Boost).
//
// Lifetimes: sessions are owned by the server's registry from accept to close (and by the
// handlers of their pending operations). Responders hold a weak reference plus the shared Gate;
// the gate closes once the I/O threads are joined, so no responder posts into a dead loop.
#pragma once

// clang-format off
#include <utility>  // before Boost.Asio: its awaitable.hpp uses std::exchange without it
// clang-format on
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/logging.h"
#include "common/thread_annotations.h"
#include "frontends/http/http_arena.h"
#include "frontends/http/http_server.h"
#include "frontends/http/http_session_state.h"
#include "frontends/http/http_types.h"

namespace nereid {
namespace http_detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
// Each connection runs on its own strand. The concrete type, not any_io_executor: Asio copies a
// socket's executor for every operation (work tracking), and an any_io_executor holding a strand
// is too large for its small buffer, so each copy was a heap allocation (4 per request).
using Executor = net::strand<net::io_context::executor_type>;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Stream = beast::basic_stream<tcp, Executor>;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                        net::wait_traits<std::chrono::steady_clock>, Executor>;
using Clock = std::chrono::steady_clock;

constexpr size_t kReadBufferBytes = 16 * 1024;  // per connection, kept across requests
constexpr size_t kHeaderArenaBytes = 4 * 1024;  // per connection: a usual request header fits

class Session;

// Closed once the I/O threads are gone; responders check it before posting.
struct Gate {
  explicit Gate(net::io_context* context) : ioc(context) {}
  Mutex mu;
  bool open GUARDED_BY(mu) = true;
  net::io_context* ioc;  // set once; valid while open
};

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

// Which deadline a connection is under (HttpServerOptions: idle, header and read timeouts).
enum class Phase { kNone, kIdle, kHeader, kBody };

// One connection. Every member function runs on the session's strand, but for the two atomics
// the acceptor reads when it looks for an idle connection to evict.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Socket&& socket, ServerCore* core)
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
  bool InStrand() const { return executor_.running_in_this_thread(); }

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
  Stream stream_;
  ServerCore* core_;
  beast::flat_buffer buffer_;
  // The parser's header fields live in header_arena_ (http_arena.h), reset between requests.
  using Parser = bhttp::request_parser<bhttp::string_body, HeaderArenaAllocator<char>>;
  HeaderArena header_arena_{kHeaderArenaBytes};
  std::optional<Parser> parser_;
  HttpRequest request_;  // lent to the handler by Dispatch, reused for the next request
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
  Timer timer_;
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

}  // namespace http_detail
}  // namespace nereid
