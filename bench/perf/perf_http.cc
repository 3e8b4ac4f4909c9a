#include "perf_http.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>

namespace nereid::perf {
namespace {

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// One connection of an event loop.
struct Conn {
  int fd = -1;
  size_t sent = 0;
  bool in_flight = false;
  uint64_t start_ns = 0;
  std::string in;
};

}  // namespace

ResponseHead ParseResponseHead(std::string_view buf) {
  ResponseHead r;
  size_t end = buf.find("\r\n\r\n");
  if (end == std::string_view::npos) {
    if (buf.size() > 65536) r.state = ResponseHead::kBad;
    return r;
  }
  r.head = end + 4;
  std::string_view head = buf.substr(0, end);
  size_t line_end = head.find("\r\n");
  std::string_view status_line = head.substr(0, line_end);
  if (!status_line.starts_with("HTTP/1.") || status_line.size() < 12) {
    r.state = ResponseHead::kBad;
    return r;
  }
  std::string_view code = status_line.substr(9, 3);
  for (char ch : code) {
    if (ch < '0' || ch > '9') {
      r.state = ResponseHead::kBad;
      return r;
    }
  }
  auto [code_end, code_ec] = std::from_chars(code.data(), code.data() + 3, r.status);
  if (code_ec != std::errc() || code_end != code.data() + 3) {
    r.state = ResponseHead::kBad;
    return r;
  }
  bool have_length = false;
  size_t length = 0;
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = head.find("\r\n", start);
    std::string_view line = head.substr(
        start, line_end == std::string_view::npos ? std::string_view::npos : line_end - start);
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = Trim(line.substr(0, colon));
    std::string_view value = Trim(line.substr(colon + 1));
    if (IEquals(name, "content-length")) {
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), length);
      if (ec != std::errc() || p != value.data() + value.size()) {
        r.state = ResponseHead::kBad;
        return r;
      }
      have_length = true;
    } else if (IEquals(name, "transfer-encoding")) {
      r.state = ResponseHead::kBad;  // chunked: not produced by KServe servers' infer replies
      return r;
    }
  }
  if (!have_length) length = 0;  // e.g. a 204 or an error without a body
  if (length > std::numeric_limits<size_t>::max() - r.head) {  // head + body would wrap
    r.state = ResponseHead::kBad;
    return r;
  }
  r.total = r.head + length;
  r.state = buf.size() >= r.total ? ResponseHead::kComplete : ResponseHead::kNeedMore;
  return r;
}

StatusOr<int> Connect(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return Unavailable("cannot resolve " + host + ": " + ::gai_strerror(rc));
  int fd = -1;
  std::string error = "no address";
  for (addrinfo* a = res; a != nullptr; a = a->ai_next) {
    fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) break;
    error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) return Unavailable("cannot connect to " + host + ":" + service + ": " + error);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

StatusOr<HttpReply> HttpGet(const std::string& host, int port, const std::string& path) {
  NEREID_ASSIGN_OR_RETURN(int fd, Connect(host, port));
  std::string req = "GET /" + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n";
  if (!WriteAll(fd, req)) {
    ::close(fd);
    return Unavailable("cannot send GET /" + path);
  }
  std::string in;
  ResponseHead head;
  char buf[65536];
  while (head.state == ResponseHead::kNeedMore) {
    ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    in.append(buf, static_cast<size_t>(n));
    head = ParseResponseHead(in);
  }
  ::close(fd);
  if (head.state != ResponseHead::kComplete) {
    return Unavailable("no complete HTTP response to GET /" + path);
  }
  return HttpReply{head.status, in.substr(head.head, head.total - head.head)};
}

void HttpDriver::Start(int concurrency, double rate, Recorder* recorder) {
  stop_ = false;
  int threads = std::min(threads_, concurrency);
  for (int t = 0; t < threads; ++t) {
    int share = concurrency / threads + (t < concurrency % threads ? 1 : 0);
    double loop_rate = rate * share / concurrency;
    loops_.emplace_back([this, share, loop_rate, recorder] { Loop(share, loop_rate, recorder); });
  }
}

void HttpDriver::Stop() {
  stop_ = true;
  for (std::thread& t : loops_) t.join();
  loops_.clear();
}

void HttpDriver::Loop(int connections, double rate, Recorder* recorder) {
  int ep = ::epoll_create1(EPOLL_CLOEXEC);
  std::vector<Conn> conns(static_cast<size_t>(connections));
  Pacer pacer(rate, NowNs());
  std::vector<Conn*> idle;  // paced mode: open connections waiting for their next start time
  int active = 0;

  auto close_conn = [&](Conn& c) {
    if (c.fd >= 0) ::close(c.fd);
    c.fd = -1;
    c.in_flight = false;
    c.in.clear();
    --active;
  };
  // Writes what the socket takes of the current request; false on a broken connection.
  auto push = [&](Conn& c) {
    while (c.sent < request_.size()) {
      ssize_t n = ::send(c.fd, request_.data() + c.sent, request_.size() - c.sent, MSG_NOSIGNAL);
      if (n > 0) {
        c.sent += static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else {
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
      }
    }
    return true;
  };
  auto begin = [&](Conn& c) {
    c.sent = 0;
    c.in_flight = true;
    c.start_ns = NowNs();
    return push(c);
  };
  // The connection's next request: now, or (paced) when the schedule says.
  auto next = [&](Conn& c) {
    if (!pacer.paced()) return begin(c);
    idle.push_back(&c);
    return true;
  };
  auto open = [&](Conn& c) {
    auto fd = Connect(host_, port_);
    if (!fd.ok()) return false;
    c.fd = *fd;
    ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT | EPOLLET | EPOLLRDHUP;
    ev.data.ptr = &c;
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
    ++active;
    return true;
  };
  // A failed request: count it and reconnect once unless stopping (a slot whose reconnect fails
  // is lost, and counted as one more error).
  auto fail = [&](Conn& c) {
    recorder->Error();
    close_conn(c);
    if (stop_) return;
    if (!open(c)) {
      recorder->Error();
    } else if (!next(c)) {
      recorder->Error();
      close_conn(c);
    }
  };

  for (Conn& c : conns) {
    if (!open(c)) {
      recorder->Error();
      continue;
    }
    if (!next(c)) fail(c);
  }
  std::vector<epoll_event> events(static_cast<size_t>(std::max(1, connections)));
  uint64_t stop_deadline = 0;
  while (active > 0) {
    if (stop_ && stop_deadline == 0) stop_deadline = NowNs() + 30'000'000'000ULL;
    if (stop_deadline != 0 && NowNs() > stop_deadline) break;  // in-flight requests never answered
    int timeout_ms = 100;
    if (pacer.paced()) {
      if (stop_) {
        for (Conn* c : idle) {
          if (c->fd >= 0 && !c->in_flight) close_conn(*c);
        }
        idle.clear();
        if (active == 0) break;
      }
      uint64_t now = NowNs();
      while (!idle.empty() && now >= pacer.Due()) {  // every request due by now
        Conn& c = *idle.back();
        idle.pop_back();
        if (c.fd < 0 || c.in_flight) continue;
        pacer.Sent();
        if (!begin(c)) fail(c);
      }
      // Sleep until the next start time (under a millisecond: poll without sleeping).
      if (!idle.empty())
        timeout_ms = static_cast<int>(std::min<uint64_t>(100, (pacer.Due() - now) / 1'000'000));
    }
    int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), timeout_ms);
    for (int i = 0; i < n; ++i) {
      Conn& c = *static_cast<Conn*>(events[i].data.ptr);
      if (c.fd < 0) continue;
      if (c.in_flight && c.sent < request_.size() && !push(c)) {
        fail(c);
        continue;
      }
      bool broken = false;
      while (true) {  // edge-triggered: read until EAGAIN
        ResponseHead head = ParseResponseHead(c.in);
        size_t want = 65536;
        if (head.state == ResponseHead::kNeedMore && head.total > c.in.size()) {
          want = std::max(want, head.total - c.in.size());
        }
        size_t old = c.in.size();
        c.in.resize(old + want);
        ssize_t r = ::recv(c.fd, c.in.data() + old, want, 0);
        c.in.resize(old + (r > 0 ? static_cast<size_t>(r) : 0));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
        if (r <= 0) {
          broken = true;
          break;
        }
      }
      // Complete responses in the buffer (one, since one request is outstanding).
      ResponseHead head = ParseResponseHead(c.in);
      if (head.state == ResponseHead::kBad ||
          (head.state == ResponseHead::kComplete && (!c.in_flight || head.total != c.in.size()))) {
        fail(c);  // garbage, an unrequested response, or bytes beyond the one response
        continue;
      }
      if (head.state == ResponseHead::kComplete) {
        uint64_t latency = NowNs() - c.start_ns;
        if (head.status == 200)
          recorder->Success(latency);
        else
          recorder->Error();
        c.in.clear();
        c.in_flight = false;
        if (stop_) {
          close_conn(c);
        } else if (broken) {
          close_conn(c);
          if (open(c) && !next(c)) fail(c);
        } else if (!next(c)) {
          fail(c);
        }
      } else if (broken) {
        if (c.in_flight) {
          fail(c);
        } else {
          close_conn(c);
        }
      }
    }
  }
  for (Conn& c : conns) {
    if (c.fd >= 0) {
      if (c.in_flight) recorder->Error();
      ::close(c.fd);
    }
  }
  ::close(ep);
}

}  // namespace nereid::perf
