#include "python/metric_message.h"

#include <gtest/gtest.h>

namespace nereid::backends::python {
namespace {

TEST(MetricMessageTest, ParsesEveryAction) {
  auto f = ParseMetricMessage(
      R"({"op":"metric","action":"family","tag":3,"name":"n","description":"d","kind":"HISTOGRAM"})");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->action, MetricMessage::Action::kFamily);
  EXPECT_EQ(f->tag, 3);
  EXPECT_EQ(f->kind, backend::MetricKind::kHistogram);
  auto m = ParseMetricMessage(
      R"({"action":"metric","tag":4,"family":7,"labels":{"a":"b"},"buckets":[0.5,1]})");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->id, 7);
  EXPECT_EQ(m->labels.at("a"), "b");
  ASSERT_TRUE(m->buckets.has_value());
  EXPECT_EQ(m->buckets->size(), 2u);
  auto a = ParseMetricMessage(R"({"action":"apply","tag":5,"metric":8,"what":"set","value":2})");
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->op, MetricOp::kSet);
  EXPECT_EQ(a->value, 2.0);
  auto r = ParseMetricMessage(R"({"action":"release","id":9})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->id, 9);
}

TEST(MetricMessageTest, RejectsMalformed) {
  for (const char* bad :
       {"", "[]", R"({"action":"nope","tag":1})", R"({"action":"family","tag":1})",
        R"({"action":"family","tag":1,"name":"n","description":"d","kind":"SUMMARY"})",
        R"({"action":"metric","tag":1,"family":"x"})",
        R"({"action":"metric","tag":1,"family":1,"labels":{"a":1}})",
        R"({"action":"metric","tag":1,"family":1,"buckets":["x"]})",
        R"({"action":"apply","tag":1,"metric":1,"what":"reset","value":1})",
        R"({"action":"apply","tag":1,"metric":1,"what":"set"})", R"({"action":"release"})",
        R"({"action":"apply","metric":1,"what":"set","value":1})"}) {
    EXPECT_FALSE(ParseMetricMessage(bad).ok()) << bad;
  }
}

TEST(MetricMessageTest, EncodesAnswers) {
  EXPECT_EQ(EncodeMetricAnswer(2, StatusOr<double>(1.5)),
            R"({"op":"metric_answer","tag":2,"value":1.5})");
  EXPECT_EQ(EncodeMetricAnswer(3, StatusOr<double>(InvalidArgument("Invalid metric name"))),
            R"({"op":"metric_answer","tag":3,"error":"Invalid metric name"})");
}

}  // namespace
}  // namespace nereid::backends::python
