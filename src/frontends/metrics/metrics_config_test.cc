// --metrics-config parsing: Triton's defaults, each setting, and what is tolerated or refused.
#include "frontends/metrics/metrics_config.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(MetricsConfigTest, TritonDefaults) {
  MetricsConfig c;
  EXPECT_TRUE(c.counter_latencies);
  EXPECT_FALSE(c.histogram_latencies);
  EXPECT_FALSE(c.summary_latencies);
  ASSERT_EQ(c.quantiles.size(), 5u);
  EXPECT_DOUBLE_EQ(c.quantiles[0].first, 0.5);
  EXPECT_DOUBLE_EQ(c.quantiles[4].first, 0.999);
}

TEST(MetricsConfigTest, EachSetting) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMetricsConfig("counter_latencies=false", &c, &warnings).ok());
  ASSERT_TRUE(ApplyMetricsConfig("histogram_latencies=true", &c, &warnings).ok());
  ASSERT_TRUE(ApplyMetricsConfig("summary_latencies=true", &c, &warnings).ok());
  ASSERT_TRUE(ApplyMetricsConfig("summary_quantiles=0.5:0.05,0.99:0.001", &c, &warnings).ok());
  EXPECT_FALSE(c.counter_latencies);
  EXPECT_TRUE(c.histogram_latencies);
  EXPECT_TRUE(c.summary_latencies);
  ASSERT_EQ(c.quantiles.size(), 2u);
  EXPECT_DOUBLE_EQ(c.quantiles[1].first, 0.99);
  EXPECT_DOUBLE_EQ(c.quantiles[1].second, 0.001);
  EXPECT_TRUE(warnings.empty());
}

TEST(MetricsConfigTest, OnlyFalseDisablesCountersAsInTriton) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMetricsConfig("counter_latencies=False", &c, &warnings).ok());
  EXPECT_TRUE(c.counter_latencies);
  EXPECT_EQ(warnings.size(), 1u);
}

TEST(MetricsConfigTest, MalformedOptionIsRefused) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  Status s = ApplyMetricsConfig("summary_latencies", &c, &warnings);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'<setting>=<value>'"), std::string::npos);
  EXPECT_FALSE(ApplyMetricsConfig("=true", &c, &warnings).ok());
}

TEST(MetricsConfigTest, BadQuantilesAreSkippedWithAWarning) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMetricsConfig("summary_quantiles=0.5:0.05,abc,1.5:0.1,0.9", &c, &warnings).ok());
  ASSERT_EQ(c.quantiles.size(), 1u);
  EXPECT_EQ(warnings.size(), 3u);
  // Nothing usable: the defaults stay.
  MetricsConfig d;
  ASSERT_TRUE(ApplyMetricsConfig("summary_quantiles=x", &d, &warnings).ok());
  EXPECT_EQ(d.quantiles.size(), 5u);
}

TEST(MetricsConfigTest, UnknownSettingIsAWarning) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMetricsConfig("gauge_latencies=true", &c, &warnings).ok());
  EXPECT_EQ(warnings.size(), 1u);
}

}  // namespace
}  // namespace nereid
