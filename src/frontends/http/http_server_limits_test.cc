// HttpServer's defences over real sockets: header and trailer limits, a parser exception
// confined to its connection, idle/header/read timeouts and the connection limit.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>
#include <vector>

#include "frontends/http/http_server.h"
#include "frontends/http/http_test_client.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

using namespace testing_http;  // NOLINT: Client, Reply, Get, Post
using std::chrono::milliseconds;

const auto Ok = EchoBody;

class HttpServerLimitsTest : public LoopbackServerTest {};

// The chunked request of issue 22: its trailer value made Beast throw std::length_error out of
// io_context::run() and std::terminate ended the process.
std::string ChunkedWithTrailer(size_t value_size) {
  return "POST /v2/models/simple/infer HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
         "1\r\na\r\n0\r\nX-T: " +
         std::string(value_size, 't') + "\r\n\r\n";
}

TEST_F(HttpServerLimitsTest, OversizedTrailerIs431AndTheServerKeepsServing) {
  StartServer({});
  Client c(server_->port());
  c.Send(ChunkedWithTrailer(65534));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 431);
  EXPECT_NE(r.body.find("trailer"), std::string::npos) << r.body;
  EXPECT_EQ(r.body.rfind(R"({"error":")", 0), 0u) << r.body;
  ExpectServing();
}

TEST_F(HttpServerLimitsTest, SmallTrailerIsAccepted) {
  StartServer({});
  Client c(server_->port());
  c.Send(ChunkedWithTrailer(100));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "a");
}

TEST_F(HttpServerLimitsTest, ParserExceptionClosesOnlyThatConnection) {
  // With a header limit above what Beast's field container can hold, the trailer fits in the
  // buffer and the container throws: that connection gets 400, the server carries on.
  HttpServerOptions o;
  o.max_header_size = 256 * 1024;
  StartServer(o);
  Client keep(server_->port());
  keep.Send(Post("/first", "1"));
  EXPECT_EQ(keep.Read().status, 200);
  Client c(server_->port());
  c.Send(ChunkedWithTrailer(65534));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("too large"), std::string::npos) << r.body;
  keep.Send(Post("/second", "2"));  // another connection, same I/O threads
  EXPECT_EQ(keep.Read().body, "2");
  ExpectServing();
}

TEST_F(HttpServerLimitsTest, HandlerThrowingAnythingAnswers500) {
  StartServer({}, [](HttpRequest&, std::shared_ptr<HttpResponder>) { throw 42; });
  Client c(server_->port());
  c.Send(Get("/throws-int"));
  EXPECT_EQ(c.Read().status, 500);
}

TEST_F(HttpServerLimitsTest, ReplyBuilderThrowingAnythingAnswers500) {
  // Inline (the handler's own strand) and from another thread: either way the request is
  // answered, and the connection and server carry on.
  StartServer({}, [](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    auto boom = []() -> HttpResponse { throw 42; };
    if (r.Path() == "/inline") return responder->SendDeferred(boom);
    if (r.Path() == "/thread") {
      return std::thread([responder, boom] { responder->SendDeferred(boom); }).detach();
    }
    Ok(r, std::move(responder));
  });
  Client c(server_->port());
  for (const char* path : {"/inline", "/thread"}) {
    c.Send(Get(path));
    EXPECT_EQ(c.Read().status, 500) << path;
  }
  c.Send(Post("/after", "2"));
  EXPECT_EQ(c.Read().body, "2");
}

TEST_F(HttpServerLimitsTest, OversizedHeaderIs431) {
  HttpServerOptions o;
  o.max_header_size = 4096;
  StartServer(o);
  Client c(server_->port());
  c.Send(Get("/big", "X-Big: " + std::string(8000, 'b') + "\r\n"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 431);
  ExpectServing();
}

TEST_F(HttpServerLimitsTest, IdleConnectionIsClosed) {
  HttpServerOptions o;
  o.idle_timeout = milliseconds(200);
  StartServer(o);
  Client never(server_->port());  // sends nothing at all
  Client after(server_->port());  // idle after one request
  after.Send(Post("/one", "1"));
  EXPECT_EQ(after.Read().status, 200);
  EXPECT_TRUE(never.ClosedWithin5s());
  EXPECT_TRUE(after.ClosedWithin5s());
}

TEST_F(HttpServerLimitsTest, RequestInFlightIsNotIdle) {
  HttpServerOptions o;
  o.idle_timeout = milliseconds(100);
  StartServer(o, [](HttpRequest&, std::shared_ptr<HttpResponder> responder) {
    std::thread([responder] {
      std::this_thread::sleep_for(milliseconds(600));
      responder->Send(HttpResponse::Empty(204));
    }).detach();
  });
  Client c(server_->port());
  c.Send(Get("/slow"));
  EXPECT_EQ(c.Read().status, 204);
}

TEST_F(HttpServerLimitsTest, SlowHeaderIs408) {
  HttpServerOptions o;
  o.header_timeout = milliseconds(200);
  o.idle_timeout = std::chrono::seconds(60);
  StartServer(o);
  Client c(server_->port());
  c.Send("GET /slow HTTP/1.1\r\nHost: x\r\nX-Drip: ");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 408);
  EXPECT_NE(r.body.find("--http-header-timeout-secs"), std::string::npos) << r.body;
  ExpectServing();
}

TEST_F(HttpServerLimitsTest, StalledBodyIs408) {
  HttpServerOptions o;
  o.read_timeout = milliseconds(200);
  StartServer(o);
  Client c(server_->port());
  c.Send("POST /stall HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 408);
  EXPECT_NE(r.body.find("--http-read-timeout-secs"), std::string::npos) << r.body;
}

TEST_F(HttpServerLimitsTest, BodyThatKeepsFlowingOutlivesTheReadTimeout) {
  HttpServerOptions o;
  // Gaps of 250 ms against a 1 s timeout: 6 x 250 ms is longer than the timeout in total, and a
  // loaded machine (CI, parallel builds) can stall either side for 700 ms without failing it.
  o.read_timeout = milliseconds(1000);
  StartServer(o);
  Client c(server_->port());
  c.Send("POST /drip HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\n");
  for (char ch : std::string("abcdef")) {
    std::this_thread::sleep_for(milliseconds(250));
    c.Send(std::string(1, ch));
  }
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "abcdef");
}

TEST_F(HttpServerLimitsTest, AtTheLimitTheLongestIdleConnectionMakesRoom) {
  HttpServerOptions o;
  o.max_connections = 3;
  StartServer(o);
  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 3; ++i) {
    idle.push_back(std::make_unique<Client>(server_->port()));
    idle.back()->Send(Post("/i", "x"));  // served, then idle
    ASSERT_EQ(idle.back()->Read().status, 200);
    // A connection goes idle when the server's write completes, which may run after the client
    // has read the reply (seen under TSan: the first connection went idle after the second one).
    // The pause makes the order the connections went idle in the order they were served.
    std::this_thread::sleep_for(milliseconds(100));
  }
  ExpectServing();                              // a fourth client is served...
  EXPECT_TRUE(idle.front()->ClosedWithin5s());  // ...and the oldest idle one was closed
  idle[2]->Send(Post("/still", "open"));        // the newest stays
  EXPECT_EQ(idle[2]->Read().body, "open");
}

TEST_F(HttpServerLimitsTest, AtTheLimitWithNoIdleConnectionTheNewClientGets503) {
  HttpServerOptions o;
  o.max_connections = 2;
  StartServer(o);
  Client a(server_->port());
  Client b(server_->port());
  a.Send("GET /partial HTTP/1.1\r\n");  // requests under way: not idle
  b.Send("GET /partial HTTP/1.1\r\n");
  std::this_thread::sleep_for(milliseconds(100));  // let both be registered and read
  Client c(server_->port());
  Reply r = c.Read();
  EXPECT_EQ(r.status, 503);
  EXPECT_NE(r.body.find("--http-max-connections"), std::string::npos) << r.body;
  a.Send("Host: x\r\n\r\n");  // the busy ones are untouched
  EXPECT_EQ(a.Read().status, 200);
}

}  // namespace
}  // namespace nereid
