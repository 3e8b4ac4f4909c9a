// HTTP/1.1 over plain sockets for nereid_perf: a blocking GET for metadata and statistics, and the
// load driver (epoll event loops, keep-alive connections, one outstanding request each).
#ifndef NEREID_BENCH_PERF_PERF_HTTP_H_
#define NEREID_BENCH_PERF_PERF_HTTP_H_

#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "nereid/status.h"
#include "perf_load.h"

namespace nereid::perf {

// Where a response stands in `buf` (which starts at the status line).
struct ResponseHead {
  enum State { kNeedMore, kComplete, kBad } state = kNeedMore;
  int status = 0;
  size_t total = 0;  // head + body bytes (known once the head is complete)
  size_t head = 0;   // head bytes, up to and including the blank line
};

// Parses the status line and Content-Length (chunked bodies are kBad: KServe servers send a
// length). kComplete only when the whole body is in `buf`.
ResponseHead ParseResponseHead(std::string_view buf);

// Connects to host:port (TCP_NODELAY); the fd, or an error.
StatusOr<int> Connect(const std::string& host, int port);

struct HttpReply {
  int status = 0;
  std::string body;
};

// One GET on a new connection.
StatusOr<HttpReply> HttpGet(const std::string& host, int port, const std::string& path);

// Closed-loop HTTP load: `threads` event loops share the connections.
class HttpDriver : public LoadDriver {
 public:
  HttpDriver(std::string host, int port, std::string request, int threads)
      : host_(std::move(host)), port_(port), request_(std::move(request)), threads_(threads) {}
  ~HttpDriver() override { Stop(); }
  void Start(int concurrency, double rate, Recorder* recorder) override;
  void Stop() override;

 private:
  void Loop(int connections, double rate, Recorder* recorder);

  std::string host_;
  int port_;
  std::string request_;
  int threads_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> loops_;
};

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_HTTP_H_
