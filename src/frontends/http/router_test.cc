#include "frontends/http/router.h"

#include <gtest/gtest.h>

#include <optional>

namespace nereid {
namespace {

// Records the single response a handler gives.
class RecordingResponder : public HttpResponder {
 public:
  void Send(HttpResponse&& r) override { response = std::move(r); }
  void SendDeferred(HttpResponseMaker make) override { response = make(); }
  std::optional<HttpResponse> response;
};

class RouterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Triton's routes as handlers.cc registers them, each tagged with a name.
    Add(kHttpPost, "/v2/models/{model}[/versions/{version}]/infer", "infer");
    Add(kHttpGet, "/v2", "server_metadata");
    Add(kHttpGet, "/v2/health/live", "live");
    Add(kHttpGet, "/v2/health/ready", "ready");
    Add(kHttpGet, "/v2/models/{model}[/versions/{version}]", "model_metadata");
    Add(kHttpGet, "/v2/models/{model}[/versions/{version}]/ready", "model_ready");
    Add(kHttpGet, "/v2/models/{model}[/versions/{version}]/config", "model_config");
  }

  void Add(unsigned methods, std::string_view pattern, std::string name) {
    ASSERT_TRUE(router_
                    .Add(methods, pattern,
                         [this, name](HttpRequest&, const RouteParams& p,
                                      std::shared_ptr<HttpResponder> responder) {
                           last_route_ = name;
                           last_params_ = p;
                           responder->Send(HttpResponse::Empty(299));
                         })
                    .ok());
  }

  // The route name, or the error status code.
  std::string Route(HttpMethod method, std::string target) {
    HttpRequest request;
    request.method = method;
    request.target = std::move(target);
    auto responder = std::make_shared<RecordingResponder>();
    last_route_.clear();
    router_.Dispatch(request, responder);
    if (!responder->response) return "no response";
    if (responder->response->status == 299) return last_route_;
    last_body_ = responder->response->body.Flatten();
    return std::to_string(responder->response->status);
  }

  HttpRouter router_;
  std::string last_route_;
  RouteParams last_params_;
  std::string last_body_;
};

TEST_F(RouterTest, MatchesEveryRoute) {
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2"), "server_metadata");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/health/live"), "live");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/health/ready"), "ready");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/simple"), "model_metadata");
  EXPECT_EQ(last_params_.model, "simple");
  EXPECT_EQ(last_params_.version, -1);
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/simple/versions/3"), "model_metadata");
  EXPECT_EQ(last_params_.version, 3);
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/simple/ready"), "model_ready");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/simple/versions/1/ready"), "model_ready");
  EXPECT_EQ(last_params_.version, 1);
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/simple/config"), "model_config");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/simple/versions/2/config"), "model_config");
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/models/simple/infer"), "infer");
  EXPECT_EQ(last_params_.model, "simple");
  EXPECT_EQ(last_params_.version, -1);
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/models/simple/versions/0/infer"), "infer");
  EXPECT_EQ(last_params_.version, 0);
}

TEST_F(RouterTest, QueryStringIsNotPartOfThePath) {
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/models/m/infer?x=1&y=2"), "infer");
  EXPECT_EQ(last_params_.model, "m");
}

TEST_F(RouterTest, DecodesModelNames) {
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/models/my%20model%2Fx/infer"), "infer");
  EXPECT_EQ(last_params_.model, "my model/x");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/a+b%41"), "model_metadata");
  EXPECT_EQ(last_params_.model, "a+bA");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/bad%2"), "400");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/bad%zz/ready"), "400");
}

TEST_F(RouterTest, RejectsBadVersions) {
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/versions/abc"), "400");
  EXPECT_NE(last_body_.find("abc"), std::string::npos);
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/models/m/versions/-1/infer"), "400");
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/models/m/versions/1.5/infer"), "400");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/versions/99999999999999999999"), "400");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/versions/9223372036854775807"), "model_metadata");
  EXPECT_EQ(last_params_.version, 9223372036854775807);
}

TEST_F(RouterTest, WrongMethodIs405) {
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/infer"), "405");
  EXPECT_EQ(last_body_, R"({"error":"Method Not Allowed"})");
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2"), "405");
  EXPECT_EQ(Route(HttpMethod::kPut, "/v2/health/live"), "405");
  EXPECT_EQ(Route(HttpMethod::kDelete, "/v2/models/m/versions/1/config"), "405");
}

TEST_F(RouterTest, UnknownPathIs404) {
  EXPECT_EQ(Route(HttpMethod::kGet, "/"), "404");
  EXPECT_EQ(last_body_, R"({"error":"Not Found"})");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/health"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/health/dead"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models//ready"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/stats"), "404");
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/repository/index"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/versions"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "v2"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/a/b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/q/r/s"), "404");
}

TEST_F(RouterTest, ExtensionRoutesAreOneLineEach) {
  Add(kHttpGet, "/v2/models/stats", "all_stats");
  Add(kHttpGet, "/v2/models/{model}[/versions/{version}]/stats", "stats");
  Add(kHttpGet | kHttpPost, "/v2/logging", "logging");
  Add(kHttpGet, "/v2/systemsharedmemory[/region/{region}]/status", "shm_status");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/m/versions/4/stats"), "stats");
  EXPECT_EQ(Route(HttpMethod::kPost, "/v2/logging"), "logging");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/systemsharedmemory/region/r%31/status"), "shm_status");
  EXPECT_EQ(last_params_.region, "r1");
  // Registered after "/v2/models/{model}", so the metadata route still wins for "stats".
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2/models/stats"), "model_metadata");
}

TEST_F(RouterTest, RootPatternMatchesTheRootAlone) {
  Add(kHttpGet, "/", "root");
  EXPECT_EQ(Route(HttpMethod::kGet, "/"), "root");
  EXPECT_EQ(Route(HttpMethod::kGet, "/?refresh=1"), "root");
  EXPECT_EQ(Route(HttpMethod::kPost, "/"), "405");
  EXPECT_EQ(Route(HttpMethod::kGet, "//"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/index.html"), "404");
  EXPECT_EQ(Route(HttpMethod::kGet, "/v2"), "server_metadata");
}

TEST(RouterPatternTest, RejectsMalformedPatterns) {
  HttpRouter router;
  auto noop = [](HttpRequest&, const RouteParams&, std::shared_ptr<HttpResponder>) {};
  EXPECT_FALSE(router.Add(kHttpGet, "v2", noop).ok());
  EXPECT_FALSE(router.Add(kHttpGet, "/v2//x", noop).ok());
  EXPECT_FALSE(router.Add(kHttpGet, "/v2/{nope}", noop).ok());
  EXPECT_FALSE(router.Add(kHttpGet, "/v2[/x", noop).ok());
}

TEST(UrlDecodeTest, Decodes) {
  std::string out;
  EXPECT_TRUE(UrlDecode("a%2Fb%2fc", &out));
  EXPECT_EQ(out, "a/b/c");
  EXPECT_TRUE(UrlDecode("%00", &out));
  EXPECT_EQ(out, std::string(1, '\0'));
  EXPECT_FALSE(UrlDecode("%", &out));
  EXPECT_FALSE(UrlDecode("%4", &out));
  EXPECT_FALSE(UrlDecode("%g0", &out));
}

}  // namespace
}  // namespace nereid
