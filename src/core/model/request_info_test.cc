#include "core/model/request_info.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "core/trace/trace.h"

namespace nereid {
namespace {

InferenceRequest Request(std::string id, int64_t rows) {
  InferenceRequest r;
  r.id = std::move(id);
  InferInput in;
  in.name = "INPUT0";
  in.shape = {rows, 4};
  r.inputs.push_back(in);
  return r;
}

TEST(RequestInfo, RowsIdsAndSequenceFlags) {
  ModelInfo model;
  model.max_batch_size = 8;
  InferenceRequest a = Request("a", 2);
  InferenceRequest b = Request("b", 3);
  b.parameters.Set("sequence_id", int64_t{42});
  b.parameters.Set("sequence_start", true);
  b.parameters.Set("sequence_end", true);
  InferenceRequest c = Request("c", 1);
  c.parameters.Set("sequence_id", std::string("corr"));
  const InferenceRequest* items[] = {&a, &b, &c};
  std::vector<backend::RequestInfo> infos = MakeRequestInfos(model, items);
  ASSERT_EQ(infos.size(), 3u);
  EXPECT_EQ(infos[0].id, "a");
  EXPECT_EQ(infos[0].batch_size, 2);
  EXPECT_EQ(infos[1].batch_size, 3);
  EXPECT_EQ(infos[1].correlation_id, 42u);
  EXPECT_EQ(infos[1].flags, 3u);
  EXPECT_EQ(infos[1].parameters_json, "{}");  // only reserved parameters
  EXPECT_EQ(infos[2].correlation_id_str, "corr");
  EXPECT_EQ(infos[2].flags, 0u);
}

TEST(RequestInfo, NonBatchingModelsHaveNoRows) {
  ModelInfo model;
  InferenceRequest a = Request("a", 2);
  const InferenceRequest* items[] = {&a};
  EXPECT_EQ(MakeRequestInfos(model, items)[0].batch_size, 0);
}

TEST(RequestInfo, ParametersAsJson) {
  Parameters p;
  p.Set("s", std::string("q\"\\\n\x01"));
  p.Set("i", int64_t{-3});
  p.Set("u", uint64_t{7});
  p.Set("b", false);
  p.Set("d", 0.5);
  p.Set("priority", int64_t{1});
  EXPECT_EQ(RequestParametersJson(p), R"({"s":"q\"\\\n\u0001","i":-3,"u":7,"b":false,"d":0.5})");
}

TEST(RequestInfo, IsCancelledFollowsTheClientAndTheServerTokens) {
  ModelInfo model;
  InferenceRequest plain = Request("plain", 1);
  InferenceRequest client = Request("client", 1);
  auto token = std::make_shared<CancelToken>();
  client.cancel_token = token;
  InferenceRequest stopping = Request("stopping", 1);
  auto stop = std::make_shared<CancelToken>();
  stopping.server_stop = stop;
  const InferenceRequest* items[] = {&plain, &client, &stopping};
  std::vector<backend::RequestInfo> infos = MakeRequestInfos(model, items);
  EXPECT_FALSE(infos[0].is_cancelled);  // nothing can cancel it
  ASSERT_TRUE(infos[1].is_cancelled && infos[2].is_cancelled);
  EXPECT_FALSE(infos[1].is_cancelled());
  EXPECT_FALSE(infos[2].is_cancelled());
  token->Cancel();
  stop->Cancel();
  EXPECT_TRUE(infos[1].is_cancelled());
  EXPECT_TRUE(infos[2].is_cancelled());
}

// API v9: a sampled request's trace, opaque to the plugin, which hands it back as a BLS call's
// InferCall::parent_trace (plugin_infer.cc spawns the child from it).
TEST(RequestInfo, CarriesTheTraceOfASampledRequest) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    ("nereid_request_info_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  trace::TraceConfig config;
  config.level = trace::kLevelTimestamps;
  config.rate = 1;
  config.file = (dir / "trace.json").string();
  StatusOr<std::shared_ptr<trace::TraceManager>> manager = trace::TraceManager::Create(config);
  ASSERT_TRUE(manager.ok()) << manager.status().message();
  ModelInfo model;
  InferenceRequest traced = Request("traced", 1);
  traced.trace = (*manager)->Sample("m");
  ASSERT_NE(traced.trace, nullptr);
  InferenceRequest plain = Request("plain", 1);
  const InferenceRequest* items[] = {&traced, &plain};
  std::vector<backend::RequestInfo> infos = MakeRequestInfos(model, items);
  EXPECT_EQ(infos[0].trace.get(), static_cast<const void*>(traced.trace.get()));
  EXPECT_EQ(infos[1].trace, nullptr);
  infos.clear();
  traced.trace.reset();
  (*manager)->Shutdown();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace nereid
