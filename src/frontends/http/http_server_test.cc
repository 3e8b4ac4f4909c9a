// HttpServer over real sockets on 127.0.0.1 (ephemeral ports), driven by a plain POSIX client.
#include "frontends/http/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "common/completion_batch.h"
#include "frontends/http/http_test_client.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

using namespace testing_http;  // NOLINT: Client, Reply, Get, Post

class HttpServerTest : public ::testing::Test {
 protected:
  void StartServer(HttpHandler handler, HttpServerOptions options = {}) {
    auto started = StartLoopbackServer(std::move(handler), std::move(options));
    ASSERT_TRUE(started.ok()) << started.status().message();
    server_ = std::move(started).value();
    ASSERT_GT(server_->port(), 0);
  }

  // Echoes method, path and body; answers after `delay_ms` from another thread when set by
  // the "delay" header.
  static void Echo(HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    std::string text = std::string(HttpMethodName(r.method)) + " " + std::string(r.Path()) + " " +
                       std::string(r.body.view());
    const std::string* delay = r.headers.Find("x-delay-ms");
    if (delay == nullptr) {
      HttpResponse resp = HttpResponse::Empty(200);
      resp.headers.Add("Content-Type", "text/plain");
      resp.body.Append(std::move(text));
      return responder->Send(std::move(resp));
    }
    std::thread([responder, text, ms = std::stoi(*delay)] {
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      responder->SendDeferred([text] {
        HttpResponse resp = HttpResponse::Empty(200);
        resp.body.Append(text);
        return resp;
      });
    }).detach();
  }

  std::unique_ptr<HttpServer> server_;
};

TEST_F(HttpServerTest, KeepAliveServesSeveralRequests) {
  StartServer(Echo);
  Client c(server_->port());
  ASSERT_TRUE(c.connected());
  c.Send(Get("/a?q=1"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "GET /a ");
  EXPECT_EQ(r.headers["content-type"], "text/plain");
  EXPECT_EQ(r.headers.count("connection"), 0u);
  c.Send(Post("/b", "hello"));
  r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /b hello");
}

TEST_F(HttpServerTest, PipelinedRequestsAreAnsweredInOrder) {
  StartServer(Echo);
  Client c(server_->port());
  // The first answer is the slowest; order must still hold.
  c.Send(Post("/1", "a", "x-delay-ms: 200\r\n") + Post("/2", "b", "x-delay-ms: 50\r\n") +
         Get("/3"));
  EXPECT_EQ(c.Read().body, "POST /1 a");
  EXPECT_EQ(c.Read().body, "POST /2 b");
  EXPECT_EQ(c.Read().body, "GET /3 ");
}

TEST_F(HttpServerTest, ConnectionCloseIsHonoured) {
  StartServer(Echo);
  Client c(server_->port());
  c.Send(Get("/x", "Connection: close\r\n") + Get("/ignored"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_TRUE(c.ClosedByServer());
}

TEST_F(HttpServerTest, Http10ClosesUnlessKeepAlive) {
  StartServer(Echo);
  Client c(server_->port());
  c.Send("GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["connection"], "keep-alive");
  c.Send("GET /old HTTP/1.0\r\n\r\n");
  EXPECT_EQ(c.Read().status, 200);
  EXPECT_TRUE(c.ClosedByServer());
}

TEST_F(HttpServerTest, BodyOverTheLimitIs400) {
  HttpServerOptions options;
  options.max_input_size = 1000;
  StartServer(Echo, options);
  Client c(server_->port());
  c.Send(Post("/big", std::string(1001, 'x')));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body,
            R"({"error":"Request JSON size of 1001 bytes exceeds the maximum allowed value of )"
            R"(1000 bytes. Use --http-max-input-size to increase the limit."})");
  EXPECT_TRUE(c.ClosedByServer());
  Client ok(server_->port());
  ok.Send(Post("/fits", std::string(1000, 'y')));
  EXPECT_EQ(ok.Read().status, 200);
}

TEST_F(HttpServerTest, LargeBodyRejectedByContentLengthStillGetsTheReply) {
  HttpServerOptions options;
  options.max_input_size = 1000;
  StartServer(Echo, options);
  Client c(server_->port());
  // The server answers as soon as it sees Content-Length, then discards the rest of the upload
  // instead of resetting the connection under the client's feet.
  c.Send(Post("/big", std::string(512 * 1024, 'x')));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.headers["connection"], "close");
}

std::string Chunked(int chunks) {
  std::string s = "POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < chunks; ++i) s += "1\r\nA\r\n";
  return s + "0\r\n\r\n";
}

TEST_F(HttpServerTest, ChunkedBodiesAndTheChunkCap) {
  HttpServerOptions options;
  options.max_chunks = 100;
  StartServer(Echo, options);
  Client c(server_->port());
  c.Send(Chunked(100));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /c " + std::string(100, 'A'));
  Client over(server_->port());
  over.Send(Chunked(101));
  r = over.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("chunks"), std::string::npos) << r.body;
}

TEST_F(HttpServerTest, TooManyChunksHasTritonsText) {
  HttpServerOptions options;
  options.max_chunks = 100;
  StartServer(Echo, options);
  Client c(server_->port());
  c.Send(Chunked(101));
  EXPECT_EQ(c.Read().body,
            R"({"error":"Chunked request body exceeds maximum of 100 non-empty chunks. Send fewer )"
            R"(or larger HTTP chunks."})");
}

// RFC 9112 §6.3: Transfer-Encoding wins, Content-Length is ignored, and the connection closes
// after the reply, so the bytes after the chunked body are never read as a second request.
TEST_F(HttpServerTest, ChunkedWithContentLengthIsReadAsChunkedThenClosed) {
  StartServer(Echo);
  Client c(server_->port());
  c.Send(
      "POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n"
      "\r\n5\r\nhello\r\n0\r\n\r\n" +
      Get("/smuggled"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /c hello");
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_TRUE(c.ClosedByServer());
  // The header may arrive in pieces: the rule applies once it is complete.
  Client slow(server_->port());
  slow.Send("POST /d HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  slow.Send("Content-Length: 100\r\n\r\n2\r\nok\r\n0\r\n\r\n");
  r = slow.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /d ok");
  EXPECT_TRUE(slow.ClosedByServer());
  Client split(server_->port());  // Content-Length first, Transfer-Encoding in the next packet
  split.Send("POST /s HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  split.Send("Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
  r = split.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "POST /s abc");
  EXPECT_TRUE(split.ClosedByServer());
  // Keep-alive framing of ordinary requests is unchanged.
  Client keep(server_->port());
  keep.Send(Post("/e", "1") + Post("/f", "2"));
  EXPECT_EQ(keep.Read().body, "POST /e 1");
  EXPECT_EQ(keep.Read().body, "POST /f 2");
}

TEST_F(HttpServerTest, DefaultChunkCapIs65536) {
  EXPECT_EQ(HttpServerOptions{}.max_chunks, 65536u);
  StartServer(Echo);
  Client c(server_->port());
  c.Send(Chunked(65537));
  EXPECT_EQ(c.Read().status, 400);
}

TEST_F(HttpServerTest, ExpectContinue) {
  StartServer(Echo);
  Client c(server_->port());
  c.Send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n");
  Reply interim = c.Read();
  EXPECT_EQ(interim.status, 100);
  c.Send("abc");
  EXPECT_EQ(c.Read().body, "POST /e abc");
}

TEST_F(HttpServerTest, MalformedRequestIs400) {
  StartServer(Echo);
  Client c(server_->port());
  c.Send("THIS IS NOT HTTP\r\n\r\n");
  EXPECT_EQ(c.Read().status, 400);
}

TEST_F(HttpServerTest, ForgottenResponderAnswers500) {
  StartServer([](HttpRequest&, std::shared_ptr<HttpResponder>) {});
  Client c(server_->port());
  c.Send(Get("/forgotten"));
  EXPECT_EQ(c.Read().status, 500);
}

TEST_F(HttpServerTest, HandlerExceptionAnswers500) {
  StartServer([](HttpRequest&, std::shared_ptr<HttpResponder>) { throw std::runtime_error("x"); });
  Client c(server_->port());
  c.Send(Get("/throw"));
  EXPECT_EQ(c.Read().status, 500);
}

TEST_F(HttpServerTest, StopLetsRequestsInFlightFinish) {
  std::promise<std::shared_ptr<HttpResponder>> held;
  StartServer([&held](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    if (r.Path() == "/warm") return responder->Send(HttpResponse::Empty(200));
    held.set_value(std::move(responder));
  });
  Client busy(server_->port());
  Client idle(server_->port());
  idle.Send(Get("/warm"));
  EXPECT_EQ(idle.Read().status, 200);
  busy.Send(Get("/slow"));
  std::shared_ptr<HttpResponder> responder = held.get_future().get();
  std::future<bool> stopped =
      std::async(std::launch::async, [this] { return server_->Stop(std::chrono::seconds(10)); });
  // Stopping closes idle connections at once and refuses new ones...
  EXPECT_TRUE(idle.ClosedByServer());
  EXPECT_EQ(stopped.wait_for(std::chrono::milliseconds(100)), std::future_status::timeout);
  // ...and waits for the request in flight, which is still written.
  responder->Send(HttpResponse::Json(200, "{}"));
  responder.reset();
  Reply r = busy.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "{}");
  EXPECT_EQ(r.headers["connection"], "close");
  EXPECT_TRUE(stopped.get());
  EXPECT_TRUE(busy.ClosedByServer());
}

TEST_F(HttpServerTest, StopTimesOutAndLateRepliesAreDropped) {
  std::shared_ptr<HttpResponder> held;
  std::mutex mu;
  StartServer([&](HttpRequest&, std::shared_ptr<HttpResponder> responder) {
    std::lock_guard<std::mutex> lock(mu);
    held = std::move(responder);
  });
  Client c(server_->port());
  c.Send(Get("/never"));
  for (int i = 0; i < 500; ++i) {
    std::lock_guard<std::mutex> lock(mu);
    if (held) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_FALSE(server_->Stop(std::chrono::milliseconds(50)));
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_NE(held, nullptr);
  held->Send(HttpResponse::Empty(200));  // after the loop is gone: silently dropped
  held.reset();
  server_.reset();
}

TEST_F(HttpServerTest, StopWithIdleKeepAliveConnectionIsPrompt) {
  StartServer(Echo);
  Client c(server_->port());
  c.Send(Get("/x"));
  EXPECT_EQ(c.Read().status, 200);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_TRUE(server_->Stop(std::chrono::seconds(10)));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_TRUE(c.ClosedByServer());
  Client refused(server_->port());
  EXPECT_FALSE(refused.connected());
}

// The client disconnects while its reply is owed: the request's cancel token is set (what lets the
// schedulers drop it), and a later reply is dropped without harm.
TEST_F(HttpServerTest, DisconnectCancelsRequestsStillOwedAReply) {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::pair<std::shared_ptr<CancelToken>, std::shared_ptr<HttpResponder>>> held;
  StartServer([&](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    std::lock_guard<std::mutex> lock(mu);
    held.emplace_back(r.cancel_token, std::move(responder));
    cv.notify_all();
  });
  auto wait_held = [&](size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(5), [&] { return held.size() >= n; });
  };
  auto wait_cancelled = [](const std::shared_ptr<CancelToken>& t) {
    for (int i = 0; i < 500 && !t->cancelled(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return t->cancelled();
  };
  {
    Client stays(server_->port());
    stays.Send(Post("/a", "x"));
    ASSERT_TRUE(wait_held(1));
    {
      Client leaves(server_->port());
      leaves.Send(Post("/b", "y"));
      ASSERT_TRUE(wait_held(2));
    }  // closed with its reply owed
    ASSERT_NE(held[1].first, nullptr);
    EXPECT_TRUE(wait_cancelled(held[1].first));
    EXPECT_FALSE(held[0].first->cancelled());        // another connection's request is untouched
    held[1].second->Send(HttpResponse::Empty(200));  // too late: dropped
    held[0].second->Send(HttpResponse::Empty(200));
    EXPECT_EQ(stays.Read().status, 200);
    EXPECT_FALSE(held[0].first->cancelled());  // answered, then the client went: not cancelled
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(held[0].first->cancelled());
}

TEST_F(HttpServerTest, BusyPortFailsCreate) {
  StartServer(Echo);
  HttpServerOptions options;
  options.address = "127.0.0.1";
  options.port = server_->port();
  auto second = HttpServer::Create(options, Echo);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), StatusCode::kUnavailable);
}

TEST_F(HttpServerTest, TritonIpv6AddressForm) {
  HttpServerOptions options;
  options.address = "ipv6:[::1]";
  options.port = 0;
  auto created = HttpServer::Create(options, Echo);
  if (!created.ok()) GTEST_SKIP() << "no IPv6 loopback: " << created.status().message();
  EXPECT_GT((*created)->port(), 0);
  EXPECT_TRUE((*created)->Start().ok());
  EXPECT_TRUE((*created)->Stop(std::chrono::seconds(1)));
}

// An executor finishing a batch: replies sent inside a CompletionBatch are held until the scope
// closes, then every connection gets its own reply.
TEST_F(HttpServerTest, RepliesInsideACompletionBatchAreSentWhenItCloses) {
  constexpr int kClients = 4;
  std::mutex mu;
  std::vector<std::pair<std::string, std::shared_ptr<HttpResponder>>> held;
  std::condition_variable all_held;
  StartServer([&](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    std::lock_guard<std::mutex> lock(mu);
    held.emplace_back(r.body.view(), std::move(responder));
    all_held.notify_all();
  });
  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(server_->port()));
    clients.back()->Send(Post("/p", "r" + std::to_string(i)));
  }
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(
        all_held.wait_for(lock, std::chrono::seconds(5), [&] { return held.size() == kClients; }));
  }
  std::thread executor([&] {
    CompletionBatch batch;
    for (auto& [body, responder] : held) {
      responder->Send(HttpResponse::Json(200, "\"" + body + "\""));
      responder.reset();
    }
    // Nothing is on the wire while the batch is open.
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (int i = 0; i < kClients; ++i) {
      pollfd p{clients[i]->fd(), POLLIN, 0};
      EXPECT_EQ(poll(&p, 1, 0), 0) << "client " << i;
    }
  });
  executor.join();
  for (int i = 0; i < kClients; ++i) {
    Reply r = clients[i]->Read();
    EXPECT_EQ(r.status, 200);
    EXPECT_EQ(r.body, "\"r" + std::to_string(i) + "\"");
  }
}

TEST_F(HttpServerTest, ManyConcurrentClients) {
  StartServer(Echo);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Client c(server_->port());
      for (int i = 0; i < 50; ++i) {
        const std::string body = std::to_string(t) + "-" + std::to_string(i);
        c.Send(Post("/p", body));
        if (c.Read().body == "POST /p " + body) ++ok;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(ok.load(), 400);
}

// A handler answering "/stream" with a chunked body: "first", then whatever `stream` gets.
HttpHandler StreamingHandler(std::shared_ptr<HttpBodyStream> stream) {
  return [stream](HttpRequest& r, std::shared_ptr<HttpResponder> responder) {
    if (r.Path() != "/stream") {
      HttpResponse resp = HttpResponse::Empty(200);
      resp.body.Append(std::string(r.Path()));
      return responder->Send(std::move(resp));
    }
    HttpResponse resp = HttpResponse::Empty(200);
    resp.headers.Add("Content-Type", "text/event-stream; charset=utf-8");
    resp.body.Append("first");
    resp.stream = stream;
    responder->Send(std::move(resp));
  };
}

TEST_F(HttpServerTest, StreamedBodyIsWrittenPieceByPiece) {
  auto stream = std::make_shared<HttpBodyStream>();
  StartServer(StreamingHandler(stream));
  Client c(server_->port());
  c.Send(Get("/stream") + Get("/after"));  // the second is answered once the stream ends
  const std::string head = c.ReadUntil("first\r\n");
  EXPECT_NE(head.find("Transfer-Encoding: chunked\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Content-Length"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\n\r\n5\r\nfirst\r\n"), std::string::npos) << head;
  // Each piece goes out when it is pushed, not when the stream ends.
  EXPECT_TRUE(stream->Push("second"));
  EXPECT_EQ(c.ReadUntil("second\r\n"), "6\r\nsecond\r\n");
  EXPECT_TRUE(stream->Push(std::string(300, 'x')));
  EXPECT_EQ(c.ReadUntil("x\r\n"), "12c\r\n" + std::string(300, 'x') + "\r\n");
  stream->Close();
  EXPECT_EQ(c.ReadUntil("0\r\n\r\n"), "0\r\n\r\n");
  Reply after = c.Read();
  EXPECT_EQ(after.status, 200);
  EXPECT_EQ(after.body, "/after");
}

TEST_F(HttpServerTest, StreamOfAClosedConnectionIsAbandoned) {
  auto stream = std::make_shared<HttpBodyStream>();
  StartServer(StreamingHandler(stream));
  {
    Client c(server_->port());
    c.Send(Get("/stream"));
    ASSERT_FALSE(c.ReadUntil("first\r\n").empty());
  }
  // The writes after the close fail; the stream then refuses pieces so its producer can stop.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool refused = false;
  while (!refused && std::chrono::steady_clock::now() < deadline) {
    refused = !stream->Push(std::string(4096, 'y'));
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(refused);
  EXPECT_TRUE(stream->abandoned());
  Client next(server_->port());
  next.Send(Get("/ok"));
  EXPECT_EQ(next.Read().body, "/ok");
}

TEST_F(HttpServerTest, StreamedBodyToAnHttp10ClientEndsWithTheConnection) {
  auto stream = std::make_shared<HttpBodyStream>();
  StartServer(StreamingHandler(stream));
  Client c(server_->port());
  c.Send("GET /stream HTTP/1.0\r\n\r\n");
  const std::string head = c.ReadUntil("first");
  EXPECT_EQ(head.find("Transfer-Encoding"), std::string::npos) << head;
  EXPECT_NE(head.find("Connection: close\r\n\r\nfirst"), std::string::npos) << head;
  EXPECT_TRUE(stream->Push("second"));
  EXPECT_EQ(c.ReadUntil("second"), "second");
  stream->Close();
  EXPECT_TRUE(c.ClosedWithin5s());
}

}  // namespace
}  // namespace nereid
