// StartTextEndpoint over a real socket on 127.0.0.1: what the metrics port answers.
#include "frontends/http/text_endpoint.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>

#include "frontends/http/http_test_client.h"

namespace nereid {
namespace {

using namespace testing_http;  // NOLINT: Client, Reply, Get, Post

class TextEndpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TextEndpointOptions options;
    options.address = "127.0.0.1";
    options.port = 0;
    auto started = StartTextEndpoint(
        options, [this] { return "scrape " + std::to_string(++scrapes_) + "\n"; });
    ASSERT_TRUE(started.ok()) << started.status().message();
    http_ = std::move(started).value();
    ASSERT_GT(http_->port(), 0);
  }

  std::atomic<int> scrapes_{0};
  std::unique_ptr<HttpServer> http_;
};

TEST_F(TextEndpointTest, GetOnThePathAnswersTheTextEachTime) {
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

TEST_F(TextEndpointTest, OtherMethodsAre405AndOtherPaths400) {
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

TEST_F(TextEndpointTest, NoScrapeRunsAfterStop) {
  EXPECT_TRUE(http_->Stop(std::chrono::milliseconds(1000)));
  const int before = scrapes_.load();
  Client c(http_->port());
  if (c.connected()) {
    c.Send(Get("/metrics"));
    EXPECT_EQ(c.Read().status, 0);
  }
  EXPECT_EQ(scrapes_.load(), before);
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
