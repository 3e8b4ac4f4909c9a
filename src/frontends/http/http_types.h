// The project's own HTTP interface: what handlers see of a request and how they answer it. Only
// the transport (http_server.cc, http_session.cc, http_responder.cc) knows the wire library
// (Boost.Beast) behind these types.
//
// Ownership: an HttpRequest is owned by the connection and lent to the handler for the duration of
// the call; its body is a shared buffer the handler may keep (inference inputs view into it). An
// HttpResponder is shared: the handler keeps it as long as it needs and answers exactly once, from
// any thread.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "common/unique_function.h"
#include "core/request/cancel_token.h"

namespace nereid {

enum class HttpMethod : unsigned char {
  kGet,
  kHead,
  kPost,
  kPut,
  kDelete,
  kPatch,
  kOptions,
  kOther
};

std::string_view HttpMethodName(HttpMethod method);

// Header fields in arrival order; names compare case-insensitively. Not thread-safe.
class HttpHeaders {
 public:
  void Add(std::string name, std::string value);
  // Same, copying into the storage of a field removed by Clear when there is one: a connection
  // reusing one HttpHeaders stops allocating once its strings are long enough.
  void AddCopy(std::string_view name, std::string_view value);
  // Removes every field; keeps their storage for AddCopy.
  void Clear() { size_ = 0; }
  // Room for `n` fields: a reply that adds several allocates their list once.
  void Reserve(size_t n) { entries_.reserve(n); }
  // The value of the first field called `name`, or nullptr.
  const std::string* Find(std::string_view name) const;
  // How many fields are called `name`.
  size_t Count(std::string_view name) const;
  // Replaces every field called `name` with one field.
  void Set(std::string_view name, std::string value);
  size_t size() const { return size_; }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.begin() + static_cast<std::ptrdiff_t>(size_); }

 private:
  // The fields are entries_[0, size_); the rest is storage kept by Clear.
  std::vector<std::pair<std::string, std::string>> entries_;
  size_t size_ = 0;
};

bool EqualsIgnoreCase(std::string_view a, std::string_view b);

// A request body: its bytes in one buffer plus the owner that keeps them alive, shared so that
// inference inputs can view into it without a copy. A small body is the parser's string; a large
// one with a Content-Length is read from the socket straight into a buffer of its final size,
// never zero-filled (http_session.cc). Copying shares the bytes.
class HttpRequestBody {
 public:
  HttpRequestBody() = default;
  // Implicit: a shared string is a body (tests and decompressed bodies).
  HttpRequestBody(std::shared_ptr<const std::string> text)  // NOLINT(google-explicit-constructor)
      : view_(text == nullptr ? std::string_view() : std::string_view(*text)),
        owner_(std::move(text)) {}
  // `bytes` must stay valid while `owner` lives.
  HttpRequestBody(std::shared_ptr<const void> owner, std::string_view bytes)
      : view_(bytes), owner_(std::move(owner)) {}

  std::string_view view() const { return view_; }
  const char* data() const { return view_.data(); }
  size_t size() const { return view_.size(); }
  bool empty() const { return view_.empty(); }
  // Keeps the bytes alive (for InferenceRequest::KeepAlive); null for an empty body.
  const std::shared_ptr<const void>& owner() const { return owner_; }
  void reset() {
    view_ = {};
    owner_.reset();
  }

 private:
  std::string_view view_;
  std::shared_ptr<const void> owner_;
};

struct HttpRequest {
  HttpMethod method = HttpMethod::kGet;
  std::string target;  // request-target as received: path plus optional "?query"
  HttpHeaders headers;
  // The whole (de-chunked) body; empty when there is none.
  HttpRequestBody body;
  // Set by the transport: cancelled when the client disconnects before this request's reply is
  // written (a handler gives it to the inference request). Null when nobody can tell.
  std::shared_ptr<CancelToken> cancel_token;
  // Steady-clock nanoseconds when the server read the request's first bytes (0: not known, e.g.
  // a pipelined request that was already buffered); the trace extension's HTTP_RECV_START.
  uint64_t recv_start_ns = 0;

  std::string_view Path() const;
  std::string_view Query() const;  // without the '?'; empty when absent
};

// A response body as a list of buffers written back to back with one gather write. Owned chunks
// live in the body; borrowed views must stay valid until the write completes, which the owners
// registered with KeepAlive guarantee. Not thread-safe.
class HttpBody {
 public:
  void Append(std::string chunk);
  void AppendView(std::string_view view);
  void KeepAlive(std::shared_ptr<const void> owner) {
    if (first_owner_ == nullptr) {
      first_owner_ = std::move(owner);  // most bodies keep one owner: no vector for it
    } else {
      owners_.push_back(std::move(owner));
    }
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Calls fn(std::string_view) for each non-empty buffer in order. The views are valid while the
  // body is neither modified, moved nor destroyed.
  template <typename Fn>
  void ForEachBuffer(Fn&& fn) const {
    if (segment_count_ == 0) return;
    Visit(first_, fn);
    for (const Segment& s : more_) Visit(s, fn);
  }
  std::string Flatten() const;
  void Clear();

 private:
  struct Segment {
    std::string owned;
    std::string_view view;
    bool borrowed = false;
  };
  template <typename Fn>
  static void Visit(const Segment& s, Fn& fn) {
    const std::string_view v = s.borrowed ? s.view : std::string_view(s.owned);
    if (!v.empty()) fn(v);
  }
  void Add(Segment segment);

  // The first segment is inline: most bodies are one buffer, which then costs no allocation.
  Segment first_;
  std::vector<Segment> more_;
  size_t segment_count_ = 0;
  std::shared_ptr<const void> first_owner_;
  std::vector<std::shared_ptr<const void>> owners_;
  size_t size_ = 0;
};

// The rest of a streamed response body (Transfer-Encoding: chunked, e.g. server-sent events): a
// producer pushes pieces from any thread and closes it; the server writes each piece as one chunk
// as soon as its connection can, then the terminating chunk after Close. Thread-safe.
class HttpBodyStream {
 public:
  // Queues `piece` (empty pieces are skipped). Returns false, dropping it, once the connection is
  // gone: the producer may stop.
  bool Push(std::string piece);
  // No more pieces. Later Push calls are dropped.
  void Close();
  bool abandoned() const;

  // Server side. `wake` is called (from the pushing thread, no lock held) after each Push and
  // Close, and at once when something is already waiting; it must not block.
  void SetWaker(std::function<void()> wake);
  // Moves out every piece pushed so far; *closed is true when Close was called and nothing
  // remains.
  std::vector<std::string> Take(bool* closed);
  // The connection is gone: pieces are dropped from now on and the waker is released.
  void Abandon();

 private:
  void Wake();

  mutable Mutex mu_;
  std::vector<std::string> pieces_ GUARDED_BY(mu_);
  bool closed_ GUARDED_BY(mu_) = false;
  bool abandoned_ GUARDED_BY(mu_) = false;
  std::shared_ptr<std::function<void()>> wake_ GUARDED_BY(mu_);
};

struct HttpResponse {
  int status = 200;
  // Content-Length and Connection are written by the server; everything else comes from here.
  HttpHeaders headers;
  HttpBody body;
  bool close_connection = false;  // close after this response is written
  // When set, the response is sent with Transfer-Encoding: chunked: `body` (if any) as the first
  // chunk, then the stream's pieces as they come (HttpBodyStream).
  std::shared_ptr<HttpBodyStream> stream;

  static HttpResponse Empty(int status);
  static HttpResponse Json(int status, std::string json);
};

// Builds a response on the connection's I/O thread (HttpResponder::SendDeferred). Move-only, with
// room inline for an inference result plus a request id and flags (infer_handler.cc).
using HttpResponseMaker = UniqueFunction<HttpResponse(), 96>;

// Answers one request. Exactly one of Send / SendDeferred must be called, once, from any thread;
// neither blocks. When the connection is already gone the response is dropped. A responder
// destroyed without answering sends 500 so a forgotten request cannot hang its connection.
class HttpResponder {
 public:
  virtual ~HttpResponder() = default;
  virtual void Send(HttpResponse&& response) = 0;
  // Runs `make` on the connection's I/O thread and writes what it returns: for responses whose
  // serialization should not run on the caller's thread (e.g. an inference executor).
  virtual void SendDeferred(HttpResponseMaker make) = 0;
  // True when called on the connection's own I/O thread (its strand), where SendDeferred would
  // run `make` at once: a caller may then build the response itself and Send it, sparing the
  // deferred closure. False elsewhere, and for responders that cannot tell.
  virtual bool OnReplyThread() const { return false; }
};

// Called on an I/O thread for each complete request. Must not block: slow work is started
// asynchronously and answered later through the responder.
using HttpHandler =
    std::function<void(HttpRequest& request, std::shared_ptr<HttpResponder> responder)>;

}  // namespace nereid
