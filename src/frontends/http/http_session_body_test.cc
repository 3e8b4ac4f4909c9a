// Large request bodies over real sockets: a Content-Length body of kDirectBodyBytes or more is read
// past the parser into one buffer (http_session_body.h). Every byte arrives, whatever the segment
// boundaries, around the threshold, after "100 Continue", before a pipelined request, and while a
// handler keeps the body after its call; a body cut short or stalled ends the connection cleanly.
#include "frontends/http/http_session_body.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "frontends/http/http_server.h"
#include "frontends/http/http_test_client.h"

namespace nereid {
namespace {

using namespace testing_http;  // NOLINT: Client, Reply, Post, EchoBody, LoopbackServerTest
using http_detail::kDirectBodyBytes;

// Bytes no run of zeros or repeated block could pass for: a lost or doubled piece shows.
std::string Pattern(size_t n) {
  std::string s(n, '\0');
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    s[i] = static_cast<char>(x);
  }
  return s;
}

class HttpSessionBodyTest : public LoopbackServerTest {};

TEST_F(HttpSessionBodyTest, BodiesAroundTheThresholdArriveWhole) {
  StartServer({});
  Client c(server_->port());
  for (size_t n : {kDirectBodyBytes - 1, kDirectBodyBytes, kDirectBodyBytes + 1,
                   3 * kDirectBodyBytes + 7, size_t{5} * 1024 * 1024 + 3}) {
    const std::string body = Pattern(n);
    c.Send(Post("/b", body));
    Reply r = c.Read();
    EXPECT_EQ(r.status, 200) << n;
    EXPECT_TRUE(r.body == body) << "body of " << n << " bytes came back different";
  }
}

TEST_F(HttpSessionBodyTest, BodySplitIntoManyPiecesWithPausesArrivesWhole) {
  StartServer({});
  Client c(server_->port());
  const std::string body = Pattern(4 * kDirectBodyBytes + 11);
  const std::string request = Post("/s", body);
  // The header and the body's first bytes in one piece, then pieces of odd sizes.
  size_t at = request.size() - body.size() + 5;
  c.Send(std::string_view(request).substr(0, at));
  size_t piece = 1;
  while (at < request.size()) {
    const size_t n = std::min(piece, request.size() - at);
    c.Send(std::string_view(request).substr(at, n));
    at += n;
    piece = piece * 3 + 7;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_TRUE(r.body == body);
}

TEST_F(HttpSessionBodyTest, PipelinedRequestAfterALargeBodyIsServed) {
  StartServer({});
  Client c(server_->port());
  const std::string body = Pattern(2 * kDirectBodyBytes + 1);
  c.Send(Post("/one", body) + Post("/two", "small"));
  EXPECT_TRUE(c.Read().body == body);
  EXPECT_EQ(c.Read().body, "small");
}

// The body is received with SO_RCVLOWAT raised (fewer wake-ups); a small request sent after the
// reply must still wake the connection.
TEST_F(HttpSessionBodyTest, SmallRequestAfterALargeBodyOnTheSameConnection) {
  StartServer({});
  Client c(server_->port());
  const std::string body = Pattern(3 * 1024 * 1024 + 5);
  c.Send(Post("/big", body));
  EXPECT_TRUE(c.Read().body == body);
  c.Send(Post("/small", "x"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "x");
}

TEST_F(HttpSessionBodyTest, ExpectContinueThenLargeBody) {
  StartServer({});
  Client c(server_->port());
  const std::string body = Pattern(kDirectBodyBytes + 100);
  c.Send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_EQ(c.Read().status, 100);
  c.Send(body);
  EXPECT_TRUE(c.Read().body == body);
}

TEST_F(HttpSessionBodyTest, HandlerMayKeepTheBodyAfterItsCall) {
  StartServer({}, [](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    std::thread([body = r.body, responder] {  // shares the buffer; the session moves on
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      HttpResponse resp = HttpResponse::Empty(200);
      resp.body.Append(std::string(body.view()));
      responder->Send(std::move(resp));
    })
        .detach();
  });
  Client c(server_->port());
  const std::string first = Pattern(kDirectBodyBytes * 2);
  const std::string second(kDirectBodyBytes * 2, 'x');
  c.Send(Post("/1", first) + Post("/2", second));
  EXPECT_TRUE(c.Read().body == first);
  EXPECT_TRUE(c.Read().body == second);
}

TEST_F(HttpSessionBodyTest, BodyCutShortByCloseEndsTheConnectionWithoutAReply) {
  std::atomic<int> calls{0};
  StartServer({}, [&calls](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    ++calls;
    EchoBody(r, std::move(responder));
  });
  {
    Client c(server_->port());
    c.Send("POST /cut HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + Pattern(100000));
    shutdown(c.fd(), SHUT_WR);
    EXPECT_TRUE(c.ClosedWithin5s());
  }
  EXPECT_EQ(calls, 0);
  ExpectServing();
}

TEST_F(HttpSessionBodyTest, StalledLargeBodyIs408) {
  HttpServerOptions options;
  options.read_timeout = std::chrono::milliseconds(300);
  StartServer(options);
  Client c(server_->port());
  c.Send("POST /slow HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n" + Pattern(70000));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 408);
  EXPECT_NE(r.body.find("request body stalled for 300 ms"), std::string::npos) << r.body;
  ExpectServing();
}

TEST_F(HttpSessionBodyTest, LargeContentLengthOverTheLimitIsRefusedBeforeTheBody) {
  HttpServerOptions options;
  options.max_input_size = 1024 * 1024;
  StartServer(options);
  Client c(server_->port());
  c.Send("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("Request JSON size of 1048577 bytes exceeds the maximum allowed value of "
                        "1048576 bytes"),
            std::string::npos)
      << r.body;
}

}  // namespace
}  // namespace nereid
