// For the HttpServer tests (real sockets, no Beast on the client side): a blocking HTTP/1.1
// client over one POSIX TCP connection to 127.0.0.1, and a server started on loopback.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "frontends/http/http_server.h"

namespace nereid::testing_http {

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// A TCP socket connected to 127.0.0.1:port (*connected says whether that worked) whose reads
// time out after 5 s. The caller closes it.
inline int ConnectLoopback(int port, bool* connected) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  *connected = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  return fd;
}

// Every read times out after 5 s.
class Client {
 public:
  explicit Client(int port) { fd_ = ConnectLoopback(port, &connected_); }
  ~Client() { close(fd_); }

  bool connected() const { return connected_; }
  int fd() const { return fd_; }

  void Send(std::string_view data) {
    while (!data.empty()) {
      const ssize_t n = send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n <= 0) return;
      data.remove_prefix(static_cast<size_t>(n));
    }
  }

  // Reads one response; status 0 when the connection ended first.
  Reply Read() {
    Reply r;
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill()) return r;
    }
    const std::string head = buf_.substr(0, end);
    buf_.erase(0, end + 4);
    r.status = std::stoi(head.substr(9, 3));
    size_t pos = head.find("\r\n");
    while (pos != std::string::npos && pos + 2 < head.size()) {
      const size_t next = head.find("\r\n", pos + 2);
      const std::string line =
          head.substr(pos + 2, next == std::string::npos ? next : next - pos - 2);
      const size_t colon = line.find(':');
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(c));
      r.headers[name] = line.substr(colon + 2);
      pos = next;
    }
    const size_t length =
        r.headers.count("content-length") ? std::stoul(r.headers["content-length"]) : 0;
    while (buf_.size() < length) {
      if (!Fill()) return Reply{};
    }
    r.body = buf_.substr(0, length);
    buf_.erase(0, length);
    return r;
  }

  // Reads until `marker` has arrived and returns everything up to and including it; empty when the
  // connection ended or the read timed out first.
  std::string ReadUntil(std::string_view marker) {
    size_t at;
    while ((at = buf_.find(marker)) == std::string::npos) {
      if (!Fill()) return "";
    }
    std::string out = buf_.substr(0, at + marker.size());
    buf_.erase(0, at + marker.size());
    return out;
  }

  // True when the server closed the connection (EOF) with nothing more to read.
  bool ClosedByServer() { return buf_.empty() && !Fill(); }

  // Strictly: true only when the server closed (EOF or reset) within the 5 s read timeout, false
  // when data arrived or the wait timed out.
  bool ClosedWithin5s() {
    if (!buf_.empty()) return false;
    char tmp[4096];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n > 0) buf_.append(tmp, static_cast<size_t>(n));
    return n == 0 || (n < 0 && errno == ECONNRESET);
  }

 private:
  bool Fill() {
    char tmp[65536];
    const ssize_t n = recv(fd_, tmp, sizeof(tmp), 0);
    if (n <= 0) return false;
    buf_.append(tmp, static_cast<size_t>(n));
    return true;
  }

  int fd_ = -1;
  bool connected_ = false;
  std::string buf_;
};

inline std::string Get(std::string_view path, std::string_view extra = "") {
  return "GET " + std::string(path) + " HTTP/1.1\r\nHost: x\r\n" + std::string(extra) + "\r\n";
}

inline std::string Post(std::string_view path, std::string_view body, std::string_view extra = "") {
  return "POST " + std::string(path) +
         " HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
         std::string(extra) + "\r\n" + std::string(body);
}

// Creates and starts `handler` on 127.0.0.1, an ephemeral port, two I/O threads.
inline StatusOr<std::unique_ptr<HttpServer>> StartLoopbackServer(HttpHandler handler,
                                                                 HttpServerOptions options) {
  options.address = "127.0.0.1";
  options.port = 0;
  options.thread_count = 2;
  NEREID_ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> server,
                          HttpServer::Create(options, std::move(handler)));
  NEREID_RETURN_IF_ERROR(server->Start());
  return server;
}

// Answers with the request body as received.
inline void EchoBody(HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
  HttpResponse resp = HttpResponse::Empty(200);
  resp.body.Append(std::string(r.body.view()));
  responder->Send(std::move(resp));
}

// A fixture serving one handler on loopback (StartLoopbackServer).
class LoopbackServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpServerOptions options, HttpHandler handler = EchoBody) {
    auto started = StartLoopbackServer(std::move(handler), std::move(options));
    ASSERT_TRUE(started.ok()) << started.status().message();
    server_ = std::move(started).value();
    ASSERT_GT(server_->port(), 0);
  }

  // The server still answers a fresh connection.
  void ExpectServing() {
    Client c(server_->port());
    ASSERT_TRUE(c.connected());
    c.Send(Post("/alive", "ok"));
    Reply r = c.Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "ok");
  }

  std::unique_ptr<HttpServer> server_;
};

}  // namespace nereid::testing_http
