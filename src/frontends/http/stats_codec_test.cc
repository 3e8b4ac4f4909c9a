// The statistics JSON: Triton's field names and order, numbers as numbers, versions as strings,
// response statistics keyed by index, an empty list as {"model_stats":[]}.
#include "frontends/http/stats_codec.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(StatsCodecTest, EmptyList) { EXPECT_EQ(EncodeModelStatistics({}), R"({"model_stats":[]})"); }

TEST(StatsCodecTest, EveryFieldInTritonsOrder) {
  ModelVersionStatistics m;
  m.name = "a\"b";
  m.version = 3;
  ModelStatsSnapshot& s = m.stats;
  s.last_inference_ms = 1700000000123;
  s.inference_count = 10;
  s.execution_count = 4;
  s.success = {4, 400};
  s.fail = {1, 7};
  s.queue = {4, 40};
  s.compute_input = {4, 41};
  s.compute_infer = {4, 42};
  s.compute_output = {4, 43};
  s.batch_stats.push_back({2, {3, 30}, {3, 31}, {3, 32}});
  ResponseStat r;
  r.success = {1, 5};
  s.response_stats["1"] = r;
  s.memory_usage.push_back({"CPU", 0, 4096});
  const std::string json = EncodeModelStatistics({m});
  EXPECT_EQ(json, R"({"model_stats":[{"name":"a\"b","version":"3","last_inference":1700000000123,)"
                  R"("inference_count":10,"execution_count":4,"inference_stats":{)"
                  R"("success":{"count":4,"ns":400},"fail":{"count":1,"ns":7},)"
                  R"("queue":{"count":4,"ns":40},"compute_input":{"count":4,"ns":41},)"
                  R"("compute_infer":{"count":4,"ns":42},"compute_output":{"count":4,"ns":43},)"
                  R"("cache_hit":{"count":0,"ns":0},"cache_miss":{"count":0,"ns":0}},)"
                  R"("response_stats":{"1":{"compute_infer":{"count":0,"ns":0},)"
                  R"("compute_output":{"count":0,"ns":0},"success":{"count":1,"ns":5},)"
                  R"("fail":{"count":0,"ns":0},"empty_response":{"count":0,"ns":0},)"
                  R"("cancel":{"count":0,"ns":0}}},)"
                  R"("batch_stats":[{"batch_size":2,"compute_input":{"count":3,"ns":30},)"
                  R"("compute_infer":{"count":3,"ns":31},"compute_output":{"count":3,"ns":32}}],)"
                  R"("memory_usage":[{"type":"CPU","id":0,"byte_size":4096}]}]})");
}

}  // namespace
}  // namespace nereid
