#include "python/custom_metrics.h"

#include <gtest/gtest.h>

namespace nereid::backends::python {
namespace {

using backend::MetricKind;

TEST(CustomMetricsTest, NamesFollowPrometheusRules) {
  EXPECT_TRUE(IsValidMetricName("requests_total"));
  EXPECT_TRUE(IsValidMetricName("a:b_c9"));
  EXPECT_FALSE(IsValidMetricName(""));
  EXPECT_FALSE(IsValidMetricName("9lives"));
  EXPECT_FALSE(IsValidMetricName("with-dash"));
  EXPECT_FALSE(IsValidMetricName("__reserved"));
  EXPECT_TRUE(IsValidLabelName("model"));
  EXPECT_FALSE(IsValidLabelName("a:b"));
  EXPECT_FALSE(IsValidLabelName("__name"));
  CustomMetrics m;
  auto bad = m.NewFamily(1, "bad name", "d", MetricKind::kCounter);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.status().message(), "Invalid metric name");
  auto f = m.NewFamily(1, "fam", "d", MetricKind::kGauge);
  ASSERT_TRUE(f.ok());
  auto label = m.NewMetric(1, *f, {{"bad-label", "x"}}, std::nullopt);
  ASSERT_FALSE(label.ok());
  EXPECT_EQ(label.status().message(), "Invalid label name");
}

TEST(CustomMetricsTest, CounterRules) {
  CustomMetrics m;
  auto f = m.NewFamily(1, "c", "a counter", MetricKind::kCounter);
  ASSERT_TRUE(f.ok());
  auto c = m.NewMetric(1, *f, {{"k", "v"}}, std::nullopt);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*m.Apply(1, *c, MetricOp::kValue, 0), 0.0);
  ASSERT_TRUE(m.Apply(1, *c, MetricOp::kIncrement, 2.5).ok());
  EXPECT_EQ(*m.Apply(1, *c, MetricOp::kValue, 0), 2.5);
  auto negative = m.Apply(1, *c, MetricOp::kIncrement, -1);
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(negative.status().message(),
            "TRITONSERVER_METRIC_KIND_COUNTER can only be incremented monotonically by "
            "non-negative values.");
  auto set = m.Apply(1, *c, MetricOp::kSet, 1);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(set.status().message(), "TRITONSERVER_METRIC_KIND_COUNTER does not support Set");
  EXPECT_EQ(m.Apply(1, *c, MetricOp::kObserve, 1).status().message(),
            "TRITONSERVER_METRIC_KIND_COUNTER does not support Observe");
  EXPECT_EQ(m.NewMetric(1, *f, {}, std::vector<double>{1.0}).status().message(),
            "Unexpected args found in counter Metric constructor.");
}

TEST(CustomMetricsTest, GaugeAndHistogram) {
  CustomMetrics m;
  auto g = *m.NewMetric(1, *m.NewFamily(1, "g", "gauge", MetricKind::kGauge), {}, std::nullopt);
  ASSERT_TRUE(m.Apply(1, g, MetricOp::kIncrement, 5).ok());
  ASSERT_TRUE(m.Apply(1, g, MetricOp::kIncrement, -2).ok());
  EXPECT_EQ(*m.Apply(1, g, MetricOp::kValue, 0), 3.0);
  ASSERT_TRUE(m.Apply(1, g, MetricOp::kSet, 42).ok());
  EXPECT_EQ(*m.Apply(1, g, MetricOp::kValue, 0), 42.0);

  auto hf = *m.NewFamily(1, "h", "histogram", MetricKind::kHistogram);
  EXPECT_EQ(m.NewMetric(1, hf, {}, std::nullopt).status().message(),
            "Bucket boundaries not found in Metric args.");
  EXPECT_EQ(m.NewMetric(1, hf, {}, std::vector<double>{1, 1, 2}).status().message(),
            "Bucket Boundaries must be strictly sorted");
  EXPECT_EQ(m.NewMetric(1, hf, {}, std::vector<double>{2, 1}).status().message(),
            "Bucket Boundaries must be strictly sorted");
  auto h = *m.NewMetric(1, hf, {{"a", "b"}}, std::vector<double>{0.1, 1, 2.5});
  EXPECT_EQ(m.Apply(1, h, MetricOp::kValue, 0).status().message(),
            "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Value");
  EXPECT_EQ(m.Apply(1, h, MetricOp::kIncrement, 1).status().message(),
            "TRITONSERVER_METRIC_KIND_HISTOGRAM does not support Increment");
  for (double v : {0.05, 1.5, 6.0}) ASSERT_TRUE(m.Apply(1, h, MetricOp::kObserve, v).ok());
  const auto snapshot = m.Snapshot();
  ASSERT_EQ(snapshot.size(), 2u);  // g, h (by name)
  const backend::MetricFamilySnapshot& hs = snapshot[1];
  EXPECT_EQ(hs.name, "h");
  ASSERT_EQ(hs.samples.size(), 1u);
  EXPECT_EQ(hs.samples[0].cumulative_counts, (std::vector<uint64_t>{1, 1, 2}));
  EXPECT_EQ(hs.samples[0].count, 3u);
  EXPECT_DOUBLE_EQ(hs.samples[0].sum, 7.55);
  EXPECT_EQ(hs.samples[0].labels, (std::vector<std::pair<std::string, std::string>>{{"a", "b"}}));
}

TEST(CustomMetricsTest, DuplicatesShareAndKindsConflict) {
  CustomMetrics m;
  auto f1 = *m.NewFamily(1, "dup", "first description", MetricKind::kCounter);
  auto f2 = *m.NewFamily(2, "dup", "second description", MetricKind::kCounter);
  auto other = m.NewFamily(1, "dup", "x", MetricKind::kGauge);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(), "Family name already exists with different type");
  auto a = *m.NewMetric(1, f1, {{"k", "v"}}, std::nullopt);
  auto b = *m.NewMetric(2, f2, {{"k", "v"}}, std::nullopt);
  ASSERT_TRUE(m.Apply(1, a, MetricOp::kIncrement, 7.5).ok());
  EXPECT_EQ(*m.Apply(2, b, MetricOp::kValue, 0), 7.5);  // the same metric
  auto snapshot = m.Snapshot();
  ASSERT_EQ(snapshot.size(), 1u);
  EXPECT_EQ(snapshot[0].help, "first description");
  ASSERT_EQ(snapshot[0].samples.size(), 1u);
  // Another owner's handle is not usable.
  EXPECT_FALSE(m.Apply(2, a, MetricOp::kValue, 0).ok());
}

TEST(CustomMetricsTest, ReleasingTheOwnerRemovesWhatNobodyHolds) {
  CustomMetrics m;
  auto f1 = *m.NewFamily(1, "fam", "d", MetricKind::kGauge);
  auto m1 = *m.NewMetric(1, f1, {{"who", "one"}}, std::nullopt);
  auto f2 = *m.NewFamily(2, "fam", "d", MetricKind::kGauge);
  ASSERT_TRUE(m.NewMetric(2, f2, {{"who", "two"}}, std::nullopt).ok());
  ASSERT_EQ(m.Snapshot()[0].samples.size(), 2u);
  m.Release(1, m1);
  ASSERT_EQ(m.Snapshot()[0].samples.size(), 1u);
  m.Release(1, f1);
  ASSERT_EQ(m.Snapshot().size(), 1u);
  m.ReleaseOwner(2);
  EXPECT_TRUE(m.Snapshot().empty());
  // The family handle released before its metric: the metric keeps the family.
  auto f3 = *m.NewFamily(3, "kept", "d", MetricKind::kCounter);
  auto m3 = *m.NewMetric(3, f3, {}, std::nullopt);
  m.Release(3, f3);
  EXPECT_TRUE(m.Apply(3, m3, MetricOp::kIncrement, 1).ok());
  ASSERT_EQ(m.Snapshot().size(), 1u);
  m.ReleaseOwner(3);
  EXPECT_TRUE(m.Snapshot().empty());
}

}  // namespace
}  // namespace nereid::backends::python
