// StartTextEndpoint over a real socket on 127.0.0.1: what the metrics port answers, on a server of
// its own and as a guest on a host server's event loop (HttpServer::CreateGuest).
#include "frontends/http/text_endpoint.h"

#include <dirent.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "frontends/http/http_test_client.h"

namespace nereid {
namespace {

using namespace testing_http;  // NOLINT: Client, Reply, Get, Post

int ThreadsOfThisProcess() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// An HTTP server with two I/O threads answering 200 "host" to everything.
std::unique_ptr<HttpServer> StartHost() {
  HttpServerOptions ho;
  ho.address = "127.0.0.1";
  ho.port = 0;
  ho.thread_count = 2;
  auto host = HttpServer::Create(ho, [](HttpRequest&, std::shared_ptr<HttpResponder> responder) {
    HttpResponse r = HttpResponse::Empty(200);
    r.body.Append("host");
    responder->Send(std::move(r));
  });
  EXPECT_TRUE(host.ok()) << host.status().message();
  if (!host.ok()) return nullptr;
  EXPECT_TRUE((*host)->Start().ok());
  return std::move(host).value();
}

// Parameter: whether the endpoint is a guest of a host server.
class TextEndpointTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    if (GetParam()) {
      host_ = StartHost();
      ASSERT_NE(host_, nullptr);
    }
    TextEndpointOptions options;
    options.address = "127.0.0.1";
    options.port = 0;
    // ThreadSanitizer starts its own background thread at the process's first pthread_create;
    // start and join one thread first so that it is already counted in threads_before_.
    std::thread([] {}).join();
    threads_before_ = ThreadsOfThisProcess();
    auto started = StartTextEndpoint(
        options, [this] { return "scrape " + std::to_string(++scrapes_) + "\n"; }, host_.get());
    ASSERT_TRUE(started.ok()) << started.status().message();
    http_ = std::move(started).value();
    ASSERT_GT(http_->port(), 0);
  }

  std::atomic<int> scrapes_{0};
  std::unique_ptr<HttpServer> host_;  // declared first: destroyed after its guest
  std::unique_ptr<HttpServer> http_;
  int threads_before_ = 0;
};

INSTANTIATE_TEST_SUITE_P(OwnThreadOrGuest, TextEndpointTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Guest" : "OwnThread"; });

TEST_P(TextEndpointTest, AGuestStartsNoThreadAndAnEndpointOfItsOwnOne) {
  EXPECT_EQ(ThreadsOfThisProcess(), threads_before_ + (GetParam() ? 0 : 1));
}

TEST_P(TextEndpointTest, GetOnThePathAnswersTheTextEachTime) {
  Client c(http_->port());
  ASSERT_TRUE(c.connected());
  c.Send(Get("/metrics"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.headers["content-type"], "text/plain; charset=utf-8");
  EXPECT_EQ(r.body, "scrape 1\n");
  c.Send(Get("/metrics?x=1"));  // the query is not part of the path
  r = c.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "scrape 2\n");
}

TEST_P(TextEndpointTest, OtherMethodsAre405AndOtherPaths400) {
  Client c(http_->port());
  ASSERT_TRUE(c.connected());
  c.Send(Post("/metrics", "x"));
  Reply r = c.Read();
  EXPECT_EQ(r.status, 405);
  EXPECT_EQ(r.body, R"({"error":"Method Not Allowed"})");
  c.Send(Get("/metrics/"));
  r = c.Read();
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.body, R"({"error":"Bad Request"})");
  c.Send(Get("/v2/health/live"));
  EXPECT_EQ(c.Read().status, 400);
  EXPECT_EQ(scrapes_.load(), 0);  // nothing was scraped for a refused request
}

TEST_P(TextEndpointTest, NoScrapeRunsAfterStop) {
  EXPECT_TRUE(http_->Stop(std::chrono::milliseconds(1000)));
  const int before = scrapes_.load();
  Client c(http_->port());
  if (c.connected()) {
    c.Send(Get("/metrics"));
    EXPECT_EQ(c.Read().status, 0);
  }
  EXPECT_EQ(scrapes_.load(), before);
}

TEST_P(TextEndpointTest, TheHostKeepsServingItsOwnPortWhenTheGuestStops) {
  if (!GetParam()) GTEST_SKIP() << "no host";
  Client h(host_->port());
  ASSERT_TRUE(h.connected());
  h.Send(Get("/metrics"));
  EXPECT_EQ(h.Read().body, "host");  // the host's handler, not the endpoint's
  EXPECT_TRUE(http_->Stop(std::chrono::milliseconds(1000)));
  h.Send(Get("/anything"));
  Reply r = h.Read();
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "host");
  http_.reset();  // the guest's state stays with the host until the host goes
  Client h2(host_->port());
  ASSERT_TRUE(h2.connected());
  h2.Send(Get("/"));
  EXPECT_EQ(h2.Read().body, "host");
}

TEST_P(TextEndpointTest, AGuestWhoseHostStoppedFirstStopsAtOnce) {
  if (!GetParam()) GTEST_SKIP() << "no host";
  Client c(http_->port());
  ASSERT_TRUE(c.connected());
  c.Send(Get("/metrics"));
  EXPECT_EQ(c.Read().status, 200);  // a kept-alive connection, then the host stops
  EXPECT_TRUE(host_->Stop(std::chrono::milliseconds(1000)));
  const int before = scrapes_.load();
  http_->Stop(std::chrono::milliseconds(60000));  // returns without waiting on the dead loop
  Client after(http_->port());
  if (after.connected()) {
    after.Send(Get("/metrics"));
    EXPECT_EQ(after.Read().status, 0);
  }
  EXPECT_EQ(scrapes_.load(), before);
  host_.reset();
  http_.reset();
}

TEST(TextEndpoint, AGuestNeedsARunningHost) {
  HttpServerOptions ho;
  ho.address = "127.0.0.1";
  ho.port = 0;
  auto host = HttpServer::Create(ho, [](HttpRequest&, std::shared_ptr<HttpResponder>) {});
  ASSERT_TRUE(host.ok());
  TextEndpointOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  auto guest = StartTextEndpoint(
      options, [] { return std::string(); }, host->get());
  ASSERT_FALSE(guest.ok());
  EXPECT_EQ(guest.status().message(), "the HTTP server hosting this one is not running");
  ASSERT_TRUE((*host)->Start().ok());
  auto guest2 = (*host)->CreateGuest(ho, [](HttpRequest&, std::shared_ptr<HttpResponder>) {});
  ASSERT_TRUE(guest2.ok());
  auto nested = (*guest2)->CreateGuest(ho, [](HttpRequest&, std::shared_ptr<HttpResponder>) {});
  EXPECT_FALSE(nested.ok());
  (*host)->Stop(std::chrono::milliseconds(0));
  EXPECT_FALSE((*host)->CreateGuest(ho, [](HttpRequest&, std::shared_ptr<HttpResponder>) {}).ok());
}

TEST(TextEndpoint, BusyPortFails) {
  TextEndpointOptions options;
  options.address = "127.0.0.1";
  options.port = 0;
  auto first = StartTextEndpoint(options, [] { return std::string(); });
  ASSERT_TRUE(first.ok()) << first.status().message();
  options.port = (*first)->port();
  EXPECT_FALSE(StartTextEndpoint(options, [] { return std::string(); }).ok());
}

}  // namespace
}  // namespace nereid
