// Session: one connection's read, parse, dispatch, write, streaming, linger and deadlines.
#include "frontends/http/http_session.h"

#include <sys/socket.h>

#include <cstring>

#include "common/inline_caller.h"
#include "common/logging.h"
#include "frontends/http/http_recycler.h"
#include "frontends/http/http_responder.h"
#include "frontends/http/http_session_buffers.h"
#include "frontends/http/http_wire.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace http_detail {
namespace {

constexpr auto kLingerTime = std::chrono::seconds(2);

// A view of buffers that outlive the write (Session::write_buffers_): Asio copies the buffer
// sequence into its write operation, and copying the std::vector allocated once per response.
struct BufferSpan {
  const net::const_buffer* first;
  size_t count;
  const net::const_buffer* begin() const { return first; }
  const net::const_buffer* end() const { return first + count; }
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

}  // namespace

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
  direct_body_.reset();
  direct_size_ = direct_received_ = 0;
  parser_.reset();  // the last request's fields are gone (Dispatch destroyed its message)
  header_arena_.Reset();
  parser_.emplace(std::piecewise_construct, std::make_tuple(),
                  std::make_tuple(HeaderArenaAllocator<char>(&header_arena_)));
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
  stream_.async_read_some(buffer_.prepare(ReadSize()),
                          [self = shared_from_this()](beast::error_code ec, size_t bytes) {
                            RunGuarded(*self, [&] { self->OnRead(ec, bytes); });
                          });
}

size_t Session::ReadSize() { return beast::read_size(buffer_, 64 * 1024); }

void Session::OnRead(beast::error_code ec, size_t bytes) {
  if (closed()) {
    reading_ = false;
    return;
  }
  if (timed_out_) return FailRead(408, ReadTimeoutText());
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

std::string Session::ReadTimeoutText() const {
  if (!header_done_) {
    return "request header not received within " +
           std::to_string(core_->options.header_timeout.count()) +
           " ms (--http-header-timeout-secs)";
  }
  return "request body stalled for " + std::to_string(core_->options.read_timeout.count()) +
         " ms (--http-read-timeout-secs)";
}

void Session::Parse() {
  // Resumed after "100 Continue" was written: the header is done, the body not begun.
  if (header_done_) {
    if (const size_t size = DirectBodySize(); size > 0) return StartDirectBody(size);
  }
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
      if (const size_t size = DirectBodySize(); size > 0) return StartDirectBody(size);
    } else if (used == 0) {
      break;
    }
  }
  if (parser_->is_done()) return OnMessage();
  ReadSome();
}

size_t Session::DirectBodySize() const {
  if (direct_body_ != nullptr || parser_->is_done() || parser_->chunked()) return 0;
  const boost::optional<uint64_t> length = parser_->content_length();
  if (!length || *length < kDirectBodyBytes) return 0;
  return static_cast<size_t>(*length);  // at most max_input_size: Beast checked body_limit
}

void Session::StartDirectBody(size_t size) {
  // Not zero-filled: every byte is received into before the body is used.
  if (size >= kPooledBodyBytes) {
    direct_body_ = LargeBufferPool::ForBodies().Acquire(size);
  } else {
    direct_body_ = std::shared_ptr<char>(new char[size], std::default_delete<char[]>());
  }
  direct_size_ = size;
  direct_received_ = std::min(buffer_.size(), size);
  std::memcpy(direct_body_.get(), buffer_.data().data(), direct_received_);
  buffer_.consume(direct_received_);
  ReadDirect();
}

void Session::ReadDirect() {
  const size_t remaining = direct_size_ - direct_received_;
  // Wake up for a receive only once kRcvLowat bytes (or the rest) are queued: fewer wake-ups.
  const int lowat = static_cast<int>(std::min<size_t>(remaining == 0 ? 1 : remaining, kRcvLowat));
  if (lowat != rcvlowat_) {
    rcvlowat_ = lowat;
    setsockopt(stream_.socket().native_handle(), SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat));
  }
  if (remaining == 0) return OnMessage();
  stream_.async_read_some(
      net::buffer(direct_body_.get() + direct_received_, direct_size_ - direct_received_),
      [self = shared_from_this()](beast::error_code ec, size_t bytes) {
        RunGuarded(*self, [&] { self->OnDirectRead(ec, bytes); });
      });
}

void Session::OnDirectRead(beast::error_code ec, size_t bytes) {
  if (closed()) {
    reading_ = false;
    return;
  }
  if (timed_out_) return FailRead(408, ReadTimeoutText());
  if (ec == net::error::eof) ec = bhttp::error::partial_message;  // the body ended early
  if (ec) return OnReadError(ec);
  direct_received_ += bytes;
  SetPhase(Phase::kBody);  // progress: the read timeout counts from the last receive
  ReadDirect();
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
  // A pipelined request parsed by the DoRead below comes back here: it is dispatched by this
  // loop, not by a nested call (replies written inline let a connection's whole buffer of
  // pipelined requests be handled in one go).
  if (in_message_) {
    message_ready_ = true;
    return;
  }
  in_message_ = true;
  do {
    message_ready_ = false;
    reading_ = false;
    SetPhase(Phase::kNone);
    Dispatch();
    DoRead();  // read ahead: pipelined requests are handled while earlier ones run
  } while (message_ready_ && !closed());
  in_message_ = false;
  MaybeClose();  // the replies may all be written already (DoWrite inside the handler)
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
  p.cancel = std::allocate_shared<CancelToken>(RecyclingAllocator<CancelToken>());
  std::shared_ptr<CancelToken> cancel = p.cancel;
  pending_.push_back(std::move(p));

  // Reused: the handler has the request only for the call, and its target and header strings
  // keep their storage from one request to the next.
  HttpRequest& request = request_;
  request.cancel_token = std::move(cancel);
  request.method = ToMethod(msg.method());
  request.target.assign(Sv(msg.target()));
  request.headers.Clear();
  for (const auto& field : msg) request.headers.AddCopy(Sv(field.name_string()), Sv(field.value()));
  if (direct_body_ != nullptr) {
    const std::string_view bytes(direct_body_.get(), direct_size_);
    request.body = HttpRequestBody(std::move(direct_body_), bytes);
  } else {
    request.body =
        HttpRequestBody(std::shared_ptr<const std::string>(std::allocate_shared<std::string>(
            RecyclingAllocator<std::string>(), std::move(msg.body()))));
  }
  request.recv_start_ns = 0;
  if (recv_start_ != Clock::time_point{}) {
    request.recv_start_ns = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(recv_start_.time_since_epoch())
            .count());
    recv_start_ = Clock::time_point{};  // the next request's first read sets it again
  }
  auto responder = NewResponder(core_->gate, weak_from_this(), seq);
  // A request run inline on this thread: this connection is not read until the handler returns,
  // so is_cancelled() peeks its socket instead (cancel_token.h).
  request.cancel_token->AttachPeer(stream_.socket().native_handle());
  // While the handler runs (it may run a model inline) new connections go to other loops, and a
  // drain of other callers' jobs asks whether this loop's other connections wait (ADR 0003).
  seat_.SetBusy(true);
  const ScopedInlineCaller inline_caller(seat_.watch());
  dispatching_ = true;
  try {
    core_->handler(request, responder);
  } catch (const std::exception& e) {
    responder->Send(ErrorResponse(500, e.what()));
  } catch (...) {
    responder->Send(ErrorResponse(500, "the request handler failed"));
  }
  dispatching_ = false;
  seat_.SetBusy(false);
  request.body.reset();  // what the handler kept stays; nothing else holds this request's data
  request.cancel_token->DetachPeer();
  request.cancel_token.reset();
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

void Session::DoWrite(bool wrote) {
  while (!writing_ && !closed() && !pending_.empty() && pending_.front().response) {
    Pending& p = pending_.front();
    HttpResponse& r = *p.response;
    const bool last = pending_.size() == 1 && (read_closed() || draining_) && !reading_;
    // An HTTP/1.0 client knows no chunked body: a streamed one ends with the connection.
    const bool close_after =
        r.close_connection || !p.keep_alive || last || (r.stream != nullptr && p.version < 11);
    WriteResponseHead(r, close_after, p.version, &write_header_);
    if (r.stream != nullptr) {
      if (!p.head) {
        writing_ = true;
        StartStream(r, close_after);
        break;
      }
      r.stream->Abandon();
    }
    const std::string& h = write_header_;
    write_buffers_.clear();
    write_buffers_.emplace_back(h.data(), h.size());
    if (!p.head) {
      r.body.ForEachBuffer(
          [this](std::string_view v) { write_buffers_.emplace_back(v.data(), v.size()); });
    }
    const BufferSpan span{write_buffers_.data(), write_buffers_.size()};
    // One send now: a reply usually fits the socket's send buffer, and then its completion takes
    // no trip through the loop (which polled epoll once more before running it).
    beast::error_code ec;
    const size_t sent = stream_.socket().write_some(span, ec);
    if (ec == net::error::would_block) ec = {};
    if (!ec && sent < net::buffer_size(span)) {
      writing_ = true;
      beast::buffers_suffix<BufferSpan> rest(span);
      rest.consume(sent);
      net::async_write(stream_.socket(), rest,
                       [self = shared_from_this(), close_after](beast::error_code ec, size_t) {
                         RunGuarded(*self, [&] { self->OnWrite(ec, close_after); });
                       });
      break;
    }
    if (!WriteDone(ec, close_after)) return;
    wrote = true;
  }
  if (wrote) AfterWrites();
}

bool Session::WriteDone(beast::error_code ec, bool close_after) {
  pending_.pop_front();
  ++write_seq_;
  if (ec || closed()) {
    Close();
    return false;
  }
  if (close_after) {
    EndReading();
    Linger();
    return false;
  }
  return true;
}

void Session::AfterWrites() {
  if (dispatching_) return;
  DoRead();
  if (reading_ && pending_.empty() && !writing_ && phase_ == Phase::kNone && buffer_.size() == 0 &&
      !parser_->got_some()) {
    SetPhase(Phase::kIdle);
  }
  MaybeClose();
}

void Session::OnWrite(beast::error_code ec, bool close_after) {
  writing_ = false;
  if (WriteDone(ec, close_after)) DoWrite(/*wrote=*/true);
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
  if (linger_buffer_ == nullptr) {
    linger_buffer_ = std::make_unique<std::array<char, kLingerBufferBytes>>();
  }
  LingerRead();
}

void Session::LingerRead() {
  stream_.async_read_some(net::buffer(*linger_buffer_),
                          [self = shared_from_this()](beast::error_code ec, size_t) {
                            RunGuarded(*self, [&] {
                              if (ec || self->draining_) return self->Close();
                              self->LingerRead();
                            });
                          });
}

void Session::MaybeClose() {
  if (closed()) return;
  // A lingering connection closes when its linger ends (LingerRead); a drain ends it now. (A
  // reply written inline, inside FailRead or OnMessage, may have started the linger already.)
  if (state_.state() == SessionState::kLingering && !draining_) return;
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

}  // namespace http_detail
}  // namespace nereid
