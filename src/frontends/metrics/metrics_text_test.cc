// The families built from statistics snapshots: names, types, labels, values, and what the
// configuration switches on and off.
#include "frontends/metrics/metrics_text.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

ModelVersionStatistics Model(const std::string& name, int64_t version) {
  ModelVersionStatistics m;
  m.name = name;
  m.version = version;
  m.stats.success = {3, 9000};
  m.stats.queue = {3, 3500};
  m.stats.compute_input = {3, 1999};
  m.stats.compute_infer = {3, 4000};
  m.stats.compute_output = {3, 1000};
  m.stats.inference_count = 10;
  m.stats.execution_count = 3;
  m.stats.fail_by_reason = {1, 0, 2, 0};
  m.stats.pending_requests = 4;
  m.stats.load_duration_ns = 1500000000;
  return m;
}

const prometheus::MetricFamily* Find(const std::vector<prometheus::MetricFamily>& f,
                                     const std::string& name) {
  for (const auto& x : f) {
    if (x.name == name) return &x;
  }
  return nullptr;
}

std::string Label(const prometheus::ClientMetric& m, const std::string& name) {
  for (const auto& l : m.label) {
    if (l.name == name) return l.value;
  }
  return "<none>";
}

TEST(MetricsTextTest, PerModelFamiliesFromSnapshots) {
  MetricsInput in;
  in.models = {Model("a", 1)};
  auto f = BuildMetricFamilies(in, MetricsConfig());
  const auto* success = Find(f, "nv_inference_request_success");
  ASSERT_NE(success, nullptr);
  EXPECT_EQ(success->type, prometheus::MetricType::Counter);
  ASSERT_EQ(success->metric.size(), 1u);
  EXPECT_EQ(success->metric[0].counter.value, 3);
  EXPECT_EQ(Label(success->metric[0], "model"), "a");
  EXPECT_EQ(Label(success->metric[0], "version"), "1");
  EXPECT_EQ(Find(f, "nv_inference_count")->metric[0].counter.value, 10);
  EXPECT_EQ(Find(f, "nv_inference_exec_count")->metric[0].counter.value, 3);
  EXPECT_EQ(Find(f, "nv_inference_request_duration_us")->metric[0].counter.value, 9);
  EXPECT_EQ(Find(f, "nv_inference_compute_input_duration_us")->metric[0].counter.value, 1);
  const auto* pending = Find(f, "nv_inference_pending_request_count");
  EXPECT_EQ(pending->type, prometheus::MetricType::Gauge);
  EXPECT_EQ(pending->metric[0].gauge.value, 4);
  EXPECT_DOUBLE_EQ(Find(f, "nv_model_load_duration_secs")->metric[0].gauge.value, 1.5);
  const auto* failure = Find(f, "nv_inference_request_failure");
  ASSERT_EQ(failure->metric.size(), 4u);
  EXPECT_EQ(Label(failure->metric[0], "reason"), "REJECTED");
  EXPECT_EQ(failure->metric[0].counter.value, 1);
  EXPECT_EQ(Label(failure->metric[2], "reason"), "BACKEND");
  EXPECT_EQ(failure->metric[2].counter.value, 2);
  EXPECT_EQ(Find(f, "nv_cpu_utilization"), nullptr);  // no CPU reading given
  EXPECT_EQ(Find(f, "nv_inference_request_summary_us"), nullptr);
}

TEST(MetricsTextTest, CacheFamiliesOnlyForCachedModelsAndWithACache) {
  MetricsInput in;
  in.models = {Model("a", 1), Model("b", 1)};
  in.models[1].stats.cache_enabled = true;
  in.models[1].stats.cache_hit = {5, 7000};
  in.models[1].stats.cache_miss = {2, 3000};
  auto f = BuildMetricFamilies(in, MetricsConfig());
  const auto* hits = Find(f, "nv_cache_num_hits_per_model");
  ASSERT_NE(hits, nullptr);
  ASSERT_EQ(hits->metric.size(), 1u);  // only "b" uses the cache
  EXPECT_EQ(Label(hits->metric[0], "model"), "b");
  EXPECT_EQ(hits->metric[0].counter.value, 5);
  EXPECT_EQ(Find(f, "nv_cache_hit_duration_per_model")->metric[0].counter.value, 7);
  EXPECT_EQ(Find(f, "nv_cache_num_misses_per_model")->metric[0].counter.value, 2);
  EXPECT_EQ(Find(f, "nv_cache_miss_duration_per_model")->metric[0].counter.value, 3);
  EXPECT_EQ(Find(f, "nv_cache_util"), nullptr);  // no cache given
  in.cache = CacheStats{3, 10, 6, 4, 1, 2000, 5000, 0.25};
  f = BuildMetricFamilies(in, MetricsConfig());
  EXPECT_EQ(Find(f, "nv_cache_num_entries")->metric[0].gauge.value, 3);
  EXPECT_EQ(Find(f, "nv_cache_num_lookups")->metric[0].gauge.value, 10);
  EXPECT_EQ(Find(f, "nv_cache_num_hits")->metric[0].gauge.value, 6);
  EXPECT_EQ(Find(f, "nv_cache_num_misses")->metric[0].gauge.value, 4);
  EXPECT_EQ(Find(f, "nv_cache_num_evictions")->metric[0].gauge.value, 1);
  EXPECT_EQ(Find(f, "nv_cache_lookup_duration")->metric[0].gauge.value, 2);
  EXPECT_EQ(Find(f, "nv_cache_insertion_duration")->metric[0].gauge.value, 5);
  EXPECT_DOUBLE_EQ(Find(f, "nv_cache_util")->metric[0].gauge.value, 0.25);
  EXPECT_EQ(Find(f, "nv_cache_util")->type, prometheus::MetricType::Gauge);
}

TEST(MetricsTextTest, MetricTagsBecomeUnderscoreLabels) {
  MetricsInput in;
  in.models = {Model("a", 2)};
  in.models[0].metric_tags = {{"team", "search"}, {"bad-name", "x"}, {"_hidden", "y"}};
  auto f = BuildMetricFamilies(in, MetricsConfig());
  const auto& m = Find(f, "nv_inference_count")->metric[0];
  EXPECT_EQ(Label(m, "_team"), "search");
  EXPECT_EQ(Label(m, "_bad-name"), "<none>");
  EXPECT_EQ(Label(m, "__hidden"), "<none>");
  EXPECT_EQ(m.label.size(), 3u);        // _team, model, version
  EXPECT_EQ(m.label[0].name, "_team");  // sorted, as prometheus-cpp families write them
}

TEST(MetricsTextTest, CounterLatenciesOffDropsDurationFamiliesOnly) {
  MetricsInput in;
  in.models = {Model("a", 1)};
  MetricsConfig c;
  c.counter_latencies = false;
  auto f = BuildMetricFamilies(in, c);
  EXPECT_EQ(Find(f, "nv_inference_request_duration_us"), nullptr);
  EXPECT_EQ(Find(f, "nv_inference_queue_duration_us"), nullptr);
  ASSERT_NE(Find(f, "nv_inference_request_success"), nullptr);
  EXPECT_EQ(Find(f, "nv_inference_request_success")->metric[0].counter.value, 3);
}

TEST(MetricsTextTest, CpuFamiliesHaveNoLabels) {
  MetricsInput in;
  in.cpu = CpuReading{0.25, 1000, 400};
  auto f = BuildMetricFamilies(in, MetricsConfig());
  ASSERT_EQ(f.size(), 3u);  // no model: no per-model family at all
  EXPECT_EQ(f[0].name, "nv_cpu_utilization");
  EXPECT_DOUBLE_EQ(f[0].metric[0].gauge.value, 0.25);
  EXPECT_TRUE(f[0].metric[0].label.empty());
  EXPECT_EQ(f[2].name, "nv_cpu_memory_used_bytes");
}

TEST(MetricsTextTest, SummariesWhenEnabled) {
  MetricsConfig c;
  c.summary_latencies = true;
  LatencyMetrics latencies(c);
  auto observer = latencies.Factory()(ObservedModel{"a", 1, false, {}});
  RequestLatencies l{5000, 1000, 2000, 3000, 4000};
  observer->Observe(l);
  observer->Observe(l);
  MetricsInput in;
  in.models = {Model("a", 1), Model("b", 1)};  // b has no summaries yet
  in.latencies = [&](const std::string& m, int64_t v) { return latencies.Find(m, v); };
  auto f = BuildMetricFamilies(in, c);
  const auto* req = Find(f, "nv_inference_request_summary_us");
  ASSERT_NE(req, nullptr);
  EXPECT_EQ(req->type, prometheus::MetricType::Summary);
  ASSERT_EQ(req->metric.size(), 1u);
  EXPECT_EQ(req->metric[0].summary.sample_count, 2u);
  EXPECT_DOUBLE_EQ(req->metric[0].summary.sample_sum, 10);
  EXPECT_EQ(req->metric[0].summary.quantile.size(), 5u);
  EXPECT_DOUBLE_EQ(Find(f, "nv_inference_compute_output_summary_us")->metric[0].summary.sample_sum,
                   8);
  const std::string text = RenderMetrics(f);
  EXPECT_NE(text.find("# TYPE nv_inference_request_summary_us summary"), std::string::npos);
  EXPECT_NE(text.find("nv_inference_request_summary_us_count{model=\"a\",version=\"1\"} 2"),
            std::string::npos);
}

TEST(MetricsTextTest, FirstResponseHistogramOnlyForDecoupledModels) {
  MetricsConfig c;
  c.histogram_latencies = true;
  LatencyMetrics latencies(c);
  EXPECT_EQ(latencies.Factory()(ObservedModel{"plain", 1, false, {}}), nullptr);
  auto dflt = latencies.Factory()(ObservedModel{"dec", 1, true, {}});
  auto custom = latencies.Factory()(
      ObservedModel{"dec2", 1, true, {{kFirstResponseHistogram, {1, 10}}, {"other", {5}}}});
  auto unsorted =
      latencies.Factory()(ObservedModel{"dec3", 1, true, {{kFirstResponseHistogram, {10, 1}}}});
  ASSERT_NE(dflt, nullptr);
  RequestLatencies l;
  l.request_ns = 700'000'000;  // 700 ms
  dflt->Observe(l);
  dflt->ObserveFailure(50'000'000);  // failed requests are observed too (their first response)
  custom->Observe(l);
  unsorted->Observe(l);
  MetricsInput in;
  in.models = {Model("dec", 1), Model("dec2", 1), Model("dec3", 1), Model("plain", 1)};
  in.latencies = [&](const std::string& m, int64_t v) { return latencies.Find(m, v); };
  auto f = BuildMetricFamilies(in, c);
  const auto* h = Find(f, "nv_inference_first_response_histogram_ms");
  ASSERT_NE(h, nullptr);
  EXPECT_EQ(h->type, prometheus::MetricType::Histogram);
  ASSERT_EQ(h->metric.size(), 3u);
  const auto& d = h->metric[0].histogram;
  EXPECT_EQ(d.sample_count, 2u);
  EXPECT_DOUBLE_EQ(d.sample_sum, 750);
  ASSERT_EQ(d.bucket.size(), 5u);               // 100, 500, 2000, 5000, +Inf
  EXPECT_EQ(d.bucket[0].cumulative_count, 1u);  // 50 ms <= 100
  EXPECT_EQ(d.bucket[1].cumulative_count, 1u);
  EXPECT_EQ(d.bucket[2].cumulative_count, 2u);          // 700 ms <= 2000
  ASSERT_EQ(h->metric[1].histogram.bucket.size(), 3u);  // 1, 10, +Inf
  EXPECT_EQ(h->metric[2].histogram.bucket.size(), 5u);  // unsorted override: the defaults
  EXPECT_EQ(Find(f, "nv_inference_request_summary_us"), nullptr);
}

TEST(MetricsTextTest, RenderedText) {
  MetricsInput in;
  in.models = {Model("a", 1)};
  const std::string text = RenderMetrics(BuildMetricFamilies(in, MetricsConfig()));
  EXPECT_NE(text.find("# HELP nv_inference_request_success Number of successful inference "
                      "requests, all batch sizes\n# TYPE nv_inference_request_success counter\n"
                      "nv_inference_request_success{model=\"a\",version=\"1\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(
      text.find("nv_inference_request_failure{model=\"a\",reason=\"BACKEND\",version=\"1\"} 2"),
      std::string::npos)
      << text;
}

TEST(MetricsTextTest, InstanceHealthFamiliesOnlyForVersionsWithInstances) {
  MetricsInput in;
  in.models.push_back(Model("py", 1));
  in.models.back().health = {2, 3, 1};        // 2 restarts, 3 instances, 1 healthy
  in.models.push_back(Model("ensemble", 1));  // no instances: not listed
  const auto f = BuildMetricFamilies(in, MetricsConfig());
  const auto* restarts = Find(f, "nereid_model_instance_restarts");
  const auto* healthy = Find(f, "nereid_model_healthy_instances");
  ASSERT_NE(restarts, nullptr);
  ASSERT_NE(healthy, nullptr);
  EXPECT_EQ(restarts->type, prometheus::MetricType::Counter);
  EXPECT_EQ(healthy->type, prometheus::MetricType::Gauge);
  ASSERT_EQ(restarts->metric.size(), 1u);
  EXPECT_EQ(Label(restarts->metric[0], "model"), "py");
  EXPECT_EQ(restarts->metric[0].counter.value, 2);
  EXPECT_EQ(healthy->metric[0].gauge.value, 1);
  in.models.erase(in.models.begin());
  EXPECT_EQ(Find(BuildMetricFamilies(in, MetricsConfig()), "nereid_model_instance_restarts"),
            nullptr);
}

TEST(MetricsTextTest, BackendFamiliesRenderAsPrometheusText) {
  MetricsInput in;
  backend::MetricFamilySnapshot counter{
      "custom_requests", "Requests", backend::MetricKind::kCounter, {}};
  backend::MetricSample c;
  c.labels = {{"model", "m"}};
  c.value = 3;
  counter.samples.push_back(c);
  backend::MetricFamilySnapshot histogram{
      "custom_sizes", "Sizes", backend::MetricKind::kHistogram, {}};
  backend::MetricSample h;
  h.labels = {{"unit", "rows"}};
  h.bounds = {0.1, 1};
  h.cumulative_counts = {1, 1};
  h.count = 3;
  h.sum = 7.55;
  histogram.samples.push_back(h);
  backend::MetricFamilySnapshot empty{"custom_empty", "nothing", backend::MetricKind::kGauge, {}};
  in.backend_families = {counter, histogram, empty};
  const std::string text = RenderMetrics(BuildMetricFamilies(in, MetricsConfig()));
  EXPECT_NE(text.find("# HELP custom_requests Requests\n# TYPE custom_requests counter\n"
                      "custom_requests{model=\"m\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("custom_sizes_count{unit=\"rows\"} 3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("custom_sizes_sum{unit=\"rows\"} 7.55\n"), std::string::npos) << text;
  EXPECT_NE(text.find("custom_sizes_bucket{unit=\"rows\",le=\"0.1\"} 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("custom_sizes_bucket{unit=\"rows\",le=\"+Inf\"} 3\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("custom_empty"), std::string::npos) << text;  // no samples: not shown
}

}  // namespace
}  // namespace nereid
