// Internal to nereid_http_server: one HTTP connection (Session) and the state it shares with the
// server (ServerCore, Gate). Only the transport's .cc files include this header (it sees Boost).
//
// Lifetimes: sessions are owned by the server's registry from accept to close (and by the
// handlers of their pending operations). Responders hold a weak reference plus the shared Gate;
// the gate closes once the I/O threads are joined, so no responder posts into a dead loop.
// Each session lives on one I/O thread's event loop (http_io_loops.h) from accept to close.
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
#include "frontends/http/http_io_loops.h"
#include "frontends/http/http_recycler.h"
#include "frontends/http/http_server.h"
#include "frontends/http/http_session_body.h"
#include "frontends/http/http_session_state.h"
#include "frontends/http/http_types.h"

namespace nereid {
namespace http_detail {

namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
// Each connection runs on its I/O thread's own io_context, which that one thread runs: no strand
// is needed to keep its handlers apart. The concrete type, not any_io_executor: Asio copies a
// socket's executor for every operation (work tracking), and a type-erased one allocated.
using Executor = net::io_context::executor_type;
using Socket = net::basic_stream_socket<tcp, Executor>;
using Stream = beast::basic_stream<tcp, Executor>;
using Timer = net::basic_waitable_timer<std::chrono::steady_clock,
                                        net::wait_traits<std::chrono::steady_clock>, Executor>;
using Clock = std::chrono::steady_clock;

constexpr size_t kReadBufferBytes = 16 * 1024;   // per connection, kept across requests
constexpr size_t kHeaderArenaBytes = 4 * 1024;   // per connection: a usual request header fits
constexpr size_t kLingerBufferBytes = 4 * 1024;  // per lingering connection only

class Session;

// Closed once the I/O threads are gone; responders check it before posting to a session's loop.
struct Gate {
  Mutex mu;
  bool open GUARDED_BY(mu) = true;
};

// State shared by the server and its sessions. Outlives every I/O thread.
struct ServerCore {
  HttpServerOptions options;
  HttpHandler handler;
  // A guest's core (HttpServer::CreateGuest) shares its host's loops.
  std::shared_ptr<IoLoops> loops;
  std::shared_ptr<Gate> gate = std::make_shared<Gate>();
  Mutex mu;
  std::condition_variable drained;
  bool stopping GUARDED_BY(mu) = false;
  std::unordered_map<const Session*, std::shared_ptr<Session>> sessions GUARDED_BY(mu);
  // Accepted connections on their way to their loop, not yet in `sessions`: counted against
  // max_connections too, or a burst of accepts outruns the loops that register them.
  std::atomic<size_t> handing_off{0};

  explicit ServerCore(std::shared_ptr<IoLoops> shared) : loops(std::move(shared)) {}
};

// Which deadline a connection is under (HttpServerOptions: idle, header and read timeouts).
enum class Phase { kNone, kIdle, kHeader, kBody };

// One connection. Every member function runs on the session's loop thread, but for the two
// atomics the acceptor reads when it looks for an idle connection to evict.
class Session : public std::enable_shared_from_this<Session> {
 public:
  // Constructed on the loop thread of `socket`'s executor; `seat` counts it on that loop.
  Session(Socket&& socket, ServerCore* core, LoopSeat seat)
      : seat_(std::move(seat)),
        executor_(socket.get_executor()),
        stream_(std::move(socket)),
        core_(core),
        // Header and trailer sections must fit in the buffer: Beast checks the header against
        // header_limit but keeps reading a trailer section for as long as the buffer grows.
        buffer_(std::max<size_t>(core->options.max_header_size, 1024)),
        timer_(executor_) {
    // Beast reads min(64 KiB, max(512, free capacity)) per receive; from an empty buffer a
    // request of a few KiB took three receives (header, then body in growing pieces).
    buffer_.reserve(std::min(kReadBufferBytes, buffer_.max_size()));
    // Sends are tried at once (DoWrite): a would-block must come back as an error, not wait
    // inside the call.
    beast::error_code ignored;
    stream_.socket().non_blocking(true, ignored);
    chunk_callback_ = [this](uint64_t size, beast::string_view, beast::error_code& ec) {
      // The terminating zero-size chunk is not counted.
      if (size > 0 && ++chunks_ > core_->options.max_chunks) {
        chunk_limit_hit_ = true;
        ec = bhttp::error::bad_chunk;
      }
    };
  }

  const Executor& executor() const { return executor_; }

  // True on this session's I/O thread (the only one running its loop, hence its handlers).
  bool InStrand() const { return executor_.running_in_this_thread(); }

  // Registers the session and serves it; when the server is stopping, the socket just closes
  // with this object.
  void Start() {
    if (!Register()) return;
    if (const LoopWatch* watch = seat_.watch()) watch->Add(stream_.socket().native_handle());
    DoRead();
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
  size_t ReadSize();  // how much the next receive asks for
  void OnRead(beast::error_code ec, size_t bytes);
  void Parse();
  size_t PrepareHeader();
  bool OnHeaderDone();
  void OnMessage();
  void OnReadError(beast::error_code ec);
  std::string ReadTimeoutText() const;
  // A body of known length, kDirectBodyBytes or more, is read past the parser into one buffer of
  // its final size (what was buffered is copied over first): no parser copy, no zero-fill.
  // Returns its length, or 0 when the parser reads the body (small, chunked or none).
  size_t DirectBodySize() const;
  void StartDirectBody(size_t size);
  void ReadDirect();
  void OnDirectRead(beast::error_code ec, size_t bytes);
  void FailRead(int code, std::string_view message);
  void Dispatch();
  void QueueError(int code, std::string_view message);
  // Writes every reply that is ready, each with one send tried at once (no trip through the loop
  // when the socket takes it all); a reply the socket does not take whole goes on asynchronously
  // and OnWrite continues. `wrote` is true when a reply was just written (OnWrite).
  void DoWrite(bool wrote = false);
  // Bookkeeping after the front reply was written (or failed). False when the connection closed
  // or lingers (no more replies).
  bool WriteDone(beast::error_code ec, bool close_after);
  // After replies were written: read on (the pipelining limit may have stopped reading), mark the
  // connection idle, close it when nothing is left. Not while a handler runs (Dispatch):
  // OnMessage reads on once it returns.
  void AfterWrites();
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

  LoopSeat seat_;
  Executor executor_;
  Stream stream_;
  ServerCore* core_;
  beast::flat_buffer buffer_;
  // The parser's header fields live in header_arena_ (http_arena.h), reset between requests.
  using Parser = bhttp::request_parser<SessionBody, HeaderArenaAllocator<char>>;
  HeaderArena header_arena_{kHeaderArenaBytes};
  std::optional<Parser> parser_;
  HttpRequest request_;  // lent to the handler by Dispatch, reused for the next request
  // The body being read past the parser (StartDirectBody): deliberately not zero-filled; bytes
  // [0, direct_received_) are written.
  std::shared_ptr<char> direct_body_;
  size_t direct_size_ = 0;
  size_t direct_received_ = 0;
  // While a body is read directly the socket's SO_RCVLOWAT is min(rest of the body, kRcvLowat):
  // the kernel wakes the connection once that much is queued rather than for every segment (per
  // 16 MB body ~28 context switches instead of ~105); back to 1 before the body is dispatched.
  static constexpr size_t kRcvLowat = 1024 * 1024;
  int rcvlowat_ = 1;
  bool dispatching_ = false;    // a handler runs (Dispatch): replies written inline read nothing
  bool in_message_ = false;     // OnMessage's loop runs: a pipelined request's OnMessage returns
  bool message_ready_ = false;  // ... after setting this, and the loop dispatches it (no recursion)
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
  // Read, not yet written; references stay valid on push_back. A Pending is larger than half of
  // libstdc++'s 512-byte deque block, so each is a node of its own: recycled, not allocated.
  std::deque<Pending, RecyclingAllocator<Pending>> pending_;
  std::string write_header_;
  std::vector<net::const_buffer> write_buffers_;
  std::shared_ptr<HttpBodyStream> body_stream_;  // the response being streamed, if any
  std::string stream_out_;                       // chunks being written
  bool stream_writing_ = false;
  bool stream_done_ = false;  // the last chunk is in stream_out_
  bool stream_close_after_ = false;
  bool stream_chunked_ = true;  // false for an HTTP/1.0 client: raw bytes, then close
  // Discards what a client sends after our last reply (Linger); allocated only then, so the
  // session's fields touched per request stay within fewer pages (1,024 connections: bench/
  // README.md, "Goal 6").
  std::unique_ptr<std::array<char, kLingerBufferBytes>> linger_buffer_;
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
