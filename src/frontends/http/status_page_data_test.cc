// CollectStatusPageData against a real InferenceServer with the identity plugin: every model
// directory, version states and reasons, counts after requests, instances, and load failures.
#include "frontends/http/status_page_data.h"

#include <gtest/gtest.h>

#include <future>
#include <string>

#include "core/config/test_temp_dir.h"
#include "core/request/test_request.h"
#include "core/server/inference_server.h"

namespace nereid {
namespace {

constexpr char kConfig[] = R"(name: "m" backend: "identity" max_batch_size: 0
input [{ name: "INPUT0" data_type: TYPE_FP32 dims: [2] }]
output [{ name: "OUTPUT0" data_type: TYPE_FP32 dims: [2] }]
instance_group [{ count: 2 kind: KIND_CPU }])";

Status Infer(InferenceServer& server) {
  std::unique_ptr<InferenceRequest> r = testing::ZeroFp32Request("m", {2});
  std::promise<Status> done;
  server.InferAsync(std::move(r), [&done](StatusOr<std::unique_ptr<InferenceResponse>> res) {
    done.set_value(res.status());
  });
  return done.get_future().get();
}

TEST(StatusPageDataTest, CollectsModelsCountsAndLoadErrors) {
  config::testing::TempDir dir;
  dir.WriteFile("m/config.pbtxt", kConfig);
  dir.MakeDir("m/1");
  dir.WriteFile("bad/config.pbtxt", R"(name: "bad" backend: "<no such backend>")");
  dir.MakeDir("bad/1");
  dir.MakeDir("idle/1");
  ServerOptions options;
  options.model_repositories = {dir.path().string()};
  options.backend_directory = NEREID_TEST_BACKEND_DIR;
  options.model_control_mode = ModelControlMode::kExplicit;
  options.startup_models = {"m", "bad"};
  options.exit_on_error = false;
  auto server = InferenceServer::Create(options);
  ASSERT_TRUE(server.ok()) << server.status().message();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(Infer(**server).ok());

  const StatusPageData data = CollectStatusPageData(**server);
  EXPECT_EQ(data.server_id, "triton");
  EXPECT_FALSE(data.server_version.empty());
  EXPECT_GE(data.uptime.count(), 0);
  ASSERT_EQ(data.models.size(), 3u);
  EXPECT_EQ(data.models[0].name, "bad");
  ASSERT_EQ(data.models[0].versions.size(), 1u);
  EXPECT_EQ(data.models[0].versions[0].state, "UNAVAILABLE");
  EXPECT_NE(data.models[0].versions[0].reason.find("<no such backend>"), std::string::npos);
  EXPECT_FALSE(data.models[0].versions[0].has_stats);
  EXPECT_EQ(data.models[1].name, "idle");
  EXPECT_TRUE(data.models[1].versions.empty());  // never loaded
  EXPECT_EQ(data.models[2].name, "m");
  ASSERT_EQ(data.models[2].versions.size(), 1u);
  const StatusPageVersion& v = data.models[2].versions[0];
  EXPECT_EQ(v.version, 1);
  EXPECT_EQ(v.state, "READY");
  ASSERT_TRUE(v.has_stats);
  EXPECT_EQ(v.instances, 2);
  EXPECT_EQ(v.queue_depth, 0);
  EXPECT_EQ(v.success, 3u);
  EXPECT_EQ(v.fail, 0u);
  EXPECT_EQ(v.inference_count, 3u);
  EXPECT_EQ(v.execution_count, 3u);
  ASSERT_EQ(v.batch_histogram.size(), 1u);
  EXPECT_EQ(v.batch_histogram[0], (std::pair<uint64_t, uint64_t>{1, 3}));
  EXPECT_EQ(v.queued_requests, 3u);
  EXPECT_LE(v.queue_p50_us, v.queue_p90_us);
  EXPECT_LE(v.queue_p90_us, v.queue_p99_us);
  ASSERT_EQ(data.load_errors.size(), 1u);
  EXPECT_EQ(data.load_errors[0].model, "bad");
  EXPECT_NE(data.load_errors[0].reason.find("load failed for model 'bad'"), std::string::npos);

  (*server)->Stop(std::chrono::steady_clock::now() + std::chrono::seconds(5));
}

}  // namespace
}  // namespace nereid
