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
  EXPECT_EQ(s.message(),
            "--metrics-config option format is <setting>=<value>. Got summary_latencies");
  for (const char* bad : {"=true", "summary_latencies=", "a,summary_latencies=true"}) {
    EXPECT_EQ(ApplyMetricsConfig(bad, &c, &warnings).message(),
              std::string("--metrics-config option format is <setting>=<value>. Got ") + bad);
  }
  // A ',' after the '=' belongs to the value.
  EXPECT_TRUE(ApplyMetricsConfig("summary_quantiles=0.5:0.1,0.9:0.1", &c, &warnings).ok());
}

// Triton reads each number with std::stod: leading blanks, trailing junk and exponents pass.
TEST(MetricsConfigTest, QuantilesParseAsLenientlyAsTriton) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(
      ApplyMetricsConfig("summary_quantiles= 0.5:0.05x,9e-1: 1e-2,0.99abc:0.001", &c, &warnings)
          .ok());
  ASSERT_EQ(c.quantiles.size(), 3u) << (warnings.empty() ? "" : warnings[0]);
  EXPECT_DOUBLE_EQ(c.quantiles[0].first, 0.5);
  EXPECT_DOUBLE_EQ(c.quantiles[0].second, 0.05);
  EXPECT_DOUBLE_EQ(c.quantiles[1].first, 0.9);
  EXPECT_DOUBLE_EQ(c.quantiles[1].second, 0.01);
  EXPECT_DOUBLE_EQ(c.quantiles[2].first, 0.99);
  EXPECT_TRUE(warnings.empty());
  // Triton's L0_metrics value: "0.0.1" is std::stod's 0.0.
  MetricsConfig qa;
  ASSERT_TRUE(
      ApplyMetricsConfig("summary_quantiles=0.1:0.0.1,0.7:0.01,0.75:0.01", &qa, &warnings).ok());
  ASSERT_EQ(qa.quantiles.size(), 3u);
  EXPECT_DOUBLE_EQ(qa.quantiles[0].second, 0.0);
  EXPECT_DOUBLE_EQ(qa.quantiles[2].first, 0.75);
  EXPECT_TRUE(warnings.empty());
  // Space-separated pairs, as in Triton's own comment: only the first pair is read.
  MetricsConfig d;
  ASSERT_TRUE(ApplyMetricsConfig("summary_quantiles=0.5:0.05 0.9:0.01", &d, &warnings).ok());
  ASSERT_EQ(d.quantiles.size(), 1u);
  EXPECT_DOUBLE_EQ(d.quantiles[0].second, 0.05);
  EXPECT_TRUE(warnings.empty());
}

TEST(MetricsConfigTest, BadQuantilesAreSkippedWithAWarning) {
  MetricsConfig c;
  std::vector<std::string> warnings;
  ASSERT_TRUE(ApplyMetricsConfig("summary_quantiles=0.5:0.05,abc,1.5:0.1,0.9,x:0.1,0.1:1e999", &c,
                                 &warnings)
                  .ok());
  ASSERT_EQ(c.quantiles.size(), 1u);
  ASSERT_EQ(warnings.size(), 5u);
  EXPECT_EQ(warnings[0],
            "Invalid option: [abc]. No ':' delimiter found. Expected format is <quantile>:<error>");
  EXPECT_EQ(warnings[3], "Invalid option: [x:0.1]. Error: stod");
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
