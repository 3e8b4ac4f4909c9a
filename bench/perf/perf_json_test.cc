#include "perf_json.h"

#include <gtest/gtest.h>

namespace nereid::perf {
namespace {

TEST(PerfJson, Metadata) {
  auto md =
      ParseMetadataJson(R"({"name":"simple","versions":["1"],"platform":"onnxruntime_onnx",)"
                        R"("inputs":[{"name":"INPUT0","datatype":"INT32","shape":[-1,16]},)"
                        R"({"name":"INPUT1","datatype":"INT32","shape":[-1,16]}],)"
                        R"("outputs":[{"name":"OUTPUT0","datatype":"INT32","shape":[-1,16]}]})");
  ASSERT_TRUE(md.ok()) << md.status().message();
  ASSERT_EQ(md->inputs.size(), 2u);
  EXPECT_EQ(md->inputs[1].name, "INPUT1");
  EXPECT_EQ(md->inputs[0].datatype, "INT32");
  EXPECT_EQ(md->inputs[0].shape, (std::vector<int64_t>{-1, 16}));
  ASSERT_EQ(md->outputs.size(), 1u);
}

TEST(PerfJson, BadMetadataIsAnError) {
  EXPECT_FALSE(ParseMetadataJson("not json").ok());
  EXPECT_FALSE(ParseMetadataJson("[]").ok());
  EXPECT_FALSE(ParseMetadataJson(R"({"inputs":[]})").ok());
  EXPECT_FALSE(ParseMetadataJson(R"({"inputs":[{"name":"a","shape":[1]}]})").ok());
  EXPECT_FALSE(
      ParseMetadataJson(R"({"inputs":[{"name":"a","datatype":"FP32","shape":[1.5]}]})").ok());
}

TEST(PerfJson, StatsSumEveryVersion) {
  auto s = ParseStatsJson(
      R"({"model_stats":[{"name":"m","version":"1","inference_count":3,"execution_count":2,)"
      R"("inference_stats":{"success":{"count":3,"ns":300},"fail":{"count":1,"ns":9},)"
      R"("queue":{"count":3,"ns":30},"compute_input":{"count":3,"ns":6},)"
      R"("compute_infer":{"count":3,"ns":150},"compute_output":{"count":3,"ns":9}}},)"
      R"({"name":"m","version":"2","inference_count":1,"execution_count":1,)"
      R"("inference_stats":{"success":{"count":1,"ns":100}}}]})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->inference_count, 4u);
  EXPECT_EQ(s->execution_count, 3u);
  EXPECT_EQ(s->success.count, 4u);
  EXPECT_EQ(s->success.ns, 400u);
  EXPECT_EQ(s->fail.count, 1u);
  EXPECT_EQ(s->queue.ns, 30u);
  EXPECT_EQ(s->compute_infer.count, 3u);
  EXPECT_FALSE(ParseStatsJson(R"({"error":"x"})").ok());
}

TEST(PerfJson, InputDataFile) {
  auto d = ParseInputDataJson(
      R"({"data":[{"A":[1,2,3],"B":{"content":["x","y"],"shape":[2]},"C":[true,false]},)"
      R"({"A":[9]}]})");
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->at("A").numbers, (std::vector<double>{1, 2, 3}));
  EXPECT_FALSE(d->at("A").has_shape);
  EXPECT_EQ(d->at("B").strings, (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(d->at("B").shape, (std::vector<int64_t>{2}));
  EXPECT_EQ(d->at("C").numbers, (std::vector<double>{1, 0}));
  EXPECT_FALSE(ParseInputDataJson(R"({"data":[]})").ok());
  EXPECT_FALSE(ParseInputDataJson(R"({"data":[{"A":[[1],[2]]}]})").ok());
  EXPECT_FALSE(ParseInputDataJson(R"({"data":[{"A":[1,"x"]}]})").ok());
  EXPECT_FALSE(ParseInputDataJson(R"({"data":[{"A":{"shape":[1]}}]})").ok());
}

}  // namespace
}  // namespace nereid::perf
