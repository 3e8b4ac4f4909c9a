#include "frontends/metrics/metrics_text.h"

#include <prometheus/text_serializer.h>

#include <limits>
#include <map>
#include <sstream>

namespace nereid {
namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using Labels = std::map<std::string, std::string>;

Labels ModelLabels(const ModelVersionStatistics& m) {
  Labels labels{{"model", m.name}, {"version", std::to_string(m.version)}};
  for (const auto& [tag, value] : m.metric_tags) {
    if (IsValidTagLabel(tag)) labels.emplace("_" + tag, value);
  }
  return labels;
}

ClientMetric WithLabels(ClientMetric metric, const Labels& labels) {
  metric.label.clear();
  for (const auto& [k, v] : labels) metric.label.push_back({k, v});
  return metric;
}

ClientMetric Counter(const Labels& labels, double value) {
  ClientMetric m;
  m.counter.value = value;
  return WithLabels(std::move(m), labels);
}

ClientMetric Gauge(const Labels& labels, double value) {
  ClientMetric m;
  m.gauge.value = value;
  return WithLabels(std::move(m), labels);
}

MetricFamily Family(const char* name, const char* help, MetricType type) {
  MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  return f;
}

double Us(uint64_t ns) { return static_cast<double>(ns / 1000); }

// One counter family with one sample per model version.
template <typename Value>
MetricFamily PerModelCounter(const MetricsInput& in, const char* name, const char* help,
                             Value value) {
  MetricFamily f = Family(name, help, MetricType::Counter);
  for (const auto& m : in.models) f.metric.push_back(Counter(ModelLabels(m), value(m.stats)));
  return f;
}

constexpr const char* kReasons[kFailureReasonCount] = {"REJECTED", "CANCELED", "BACKEND", "OTHER"};

struct SummaryFamily {
  const char* name;
  const char* help;
};
constexpr SummaryFamily kSummaries[VersionLatencyMetrics::kSummaryCount] = {
    {"nv_inference_request_summary_us",
     "Summary of inference request duration in microseconds (includes cached requests)"},
    {"nv_inference_queue_summary_us",
     "Summary of inference queuing duration in microseconds (includes cached requests)"},
    {"nv_inference_compute_input_summary_us",
     "Cumulative compute input duration in microseconds (does not include cached requests)"},
    {"nv_inference_compute_infer_summary_us",
     "Cumulative compute inference duration in microseconds (does not include cached requests)"},
    {"nv_inference_compute_output_summary_us",
     "Cumulative inference compute output duration in microseconds (does not include cached "
     "requests)"},
};

void AddObserved(const MetricsInput& in, std::vector<MetricFamily>* out) {
  std::vector<std::pair<Labels, std::shared_ptr<const VersionLatencyMetrics>>> found;
  for (const auto& m : in.models) {
    auto l = in.latencies ? in.latencies(m.name, m.version) : nullptr;
    if (l) found.emplace_back(ModelLabels(m), std::move(l));
  }
  MetricFamily histogram =
      Family(kFirstResponseHistogram, "Duration from request to first response in milliseconds",
             MetricType::Histogram);
  for (const auto& [labels, l] : found) {
    if (l->has_histogram()) histogram.metric.push_back(WithLabels(l->CollectHistogram(), labels));
  }
  if (!histogram.metric.empty()) out->push_back(std::move(histogram));
  for (int i = 0; i < VersionLatencyMetrics::kSummaryCount; ++i) {
    MetricFamily f = Family(kSummaries[i].name, kSummaries[i].help, MetricType::Summary);
    for (const auto& [labels, l] : found) {
      if (l->has_summaries()) f.metric.push_back(WithLabels(l->CollectSummary(i), labels));
    }
    if (!f.metric.empty()) out->push_back(std::move(f));
  }
}

// Triton's per-model cache counters, only for versions that use the cache (REFERENCE-2 §8.3).
void AddPerModelCache(const MetricsInput& in, std::vector<MetricFamily>* out) {
  struct Def {
    const char* name;
    const char* help;
    double (*value)(const ModelStatsSnapshot&);
  };
  static constexpr Def kDefs[] = {
      {"nv_cache_num_hits_per_model", "Number of cache hits per model",
       [](const ModelStatsSnapshot& s) { return static_cast<double>(s.cache_hit.count); }},
      {"nv_cache_hit_duration_per_model", "Total cache hit duration per model, in microseconds",
       [](const ModelStatsSnapshot& s) { return Us(s.cache_hit.ns); }},
      {"nv_cache_num_misses_per_model", "Number of cache misses per model",
       [](const ModelStatsSnapshot& s) { return static_cast<double>(s.cache_miss.count); }},
      {"nv_cache_miss_duration_per_model",
       "Total cache miss (insert+lookup) duration per model, in microseconds",
       [](const ModelStatsSnapshot& s) { return Us(s.cache_miss.ns); }},
  };
  for (const Def& d : kDefs) {
    MetricFamily f = Family(d.name, d.help, MetricType::Counter);
    for (const auto& m : in.models) {
      if (m.stats.cache_enabled) f.metric.push_back(Counter(ModelLabels(m), d.value(m.stats)));
    }
    if (!f.metric.empty()) out->push_back(std::move(f));
  }
}

// The cache-wide gauges of Triton's local cache (REFERENCE-2 §8.3).
void AddCacheWide(const CacheStats& c, std::vector<MetricFamily>* out) {
  const Labels none;
  auto gauge = [&](const char* name, const char* help, double value) {
    MetricFamily f = Family(name, help, MetricType::Gauge);
    f.metric.push_back(Gauge(none, value));
    out->push_back(std::move(f));
  };
  gauge("nv_cache_num_entries", "Number of responses stored in response cache",
        static_cast<double>(c.num_entries));
  gauge("nv_cache_num_lookups", "Number of cache lookups in response cache",
        static_cast<double>(c.num_lookups));
  gauge("nv_cache_num_hits", "Number of cache hits in response cache",
        static_cast<double>(c.num_hits));
  gauge("nv_cache_num_misses", "Number of cache misses in response cache",
        static_cast<double>(c.num_misses));
  gauge("nv_cache_num_evictions", "Number of cache evictions in response cache",
        static_cast<double>(c.num_evictions));
  gauge("nv_cache_lookup_duration", "Total cache lookup duration (hit and miss), in microseconds",
        Us(c.lookup_ns));
  gauge("nv_cache_insertion_duration", "Total cache insertion duration, in microseconds",
        Us(c.insertion_ns));
  gauge("nv_cache_util", "Cache utilization [0.0 - 1.0]", c.util);
}

// Nereid's own families (nereid_ prefix, docs/operations.md): instance restarts and healthy
// instances of the versions that have instances (the backend reports them, ADR 0015).
void AddInstanceHealth(const MetricsInput& in, std::vector<MetricFamily>* out) {
  MetricFamily restarts = Family("nereid_model_instance_restarts",
                                 "Number of times an instance of the model stopped serving and "
                                 "was restarted (python backend stub processes)",
                                 MetricType::Counter);
  MetricFamily healthy =
      Family("nereid_model_healthy_instances",
             "Instantaneous number of the model's instances that can serve", MetricType::Gauge);
  for (const auto& m : in.models) {
    if (m.health.instances == 0) continue;
    restarts.metric.push_back(Counter(ModelLabels(m), static_cast<double>(m.health.restarts)));
    healthy.metric.push_back(Gauge(ModelLabels(m), static_cast<double>(m.health.healthy)));
  }
  if (restarts.metric.empty()) return;
  out->push_back(std::move(restarts));
  out->push_back(std::move(healthy));
}

// The backends' own families (python's pb_utils.MetricFamily), as prometheus-cpp renders
// Triton's custom families: counters and gauges one sample per label set, histograms with their
// buckets, +Inf, _sum and _count.
void AddBackendFamilies(const MetricsInput& in, std::vector<MetricFamily>* out) {
  for (const backend::MetricFamilySnapshot& b : in.backend_families) {
    if (b.samples.empty()) continue;
    MetricFamily f;
    f.name = b.name;
    f.help = b.help;
    f.type = b.kind == backend::MetricKind::kCounter ? MetricType::Counter
             : b.kind == backend::MetricKind::kGauge ? MetricType::Gauge
                                                     : MetricType::Histogram;
    for (const backend::MetricSample& sample : b.samples) {
      ClientMetric m;
      for (const auto& [k, v] : sample.labels) m.label.push_back({k, v});
      if (b.kind == backend::MetricKind::kCounter) {
        m.counter.value = sample.value;
      } else if (b.kind == backend::MetricKind::kGauge) {
        m.gauge.value = sample.value;
      } else {
        m.histogram.sample_count = sample.count;
        m.histogram.sample_sum = sample.sum;
        for (size_t i = 0; i < sample.bounds.size() && i < sample.cumulative_counts.size(); ++i) {
          m.histogram.bucket.push_back({sample.cumulative_counts[i], sample.bounds[i]});
        }
        m.histogram.bucket.push_back({sample.count, std::numeric_limits<double>::infinity()});
      }
      f.metric.push_back(std::move(m));
    }
    out->push_back(std::move(f));
  }
}

}  // namespace

bool IsValidTagLabel(const std::string& tag) {
  for (char c : tag) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    if (!ok) return false;
  }
  // "_" + tag must not start with "__", which Prometheus reserves.
  return !tag.empty() && tag.front() != '_';
}

std::vector<MetricFamily> BuildMetricFamilies(const MetricsInput& in, const MetricsConfig& config) {
  std::vector<MetricFamily> out;
  if (!in.models.empty()) {
    out.push_back(PerModelCounter(
        in, "nv_inference_request_success",
        "Number of successful inference requests, all batch sizes",
        [](const ModelStatsSnapshot& s) { return static_cast<double>(s.success.count); }));
    MetricFamily failure =
        Family("nv_inference_request_failure",
               "Number of failed inference requests, all batch sizes", MetricType::Counter);
    for (const auto& m : in.models) {
      for (int r = 0; r < kFailureReasonCount; ++r) {
        Labels labels = ModelLabels(m);
        labels["reason"] = kReasons[r];
        failure.metric.push_back(
            Counter(labels, static_cast<double>(m.stats.fail_by_reason[static_cast<size_t>(r)])));
      }
    }
    out.push_back(std::move(failure));
    out.push_back(PerModelCounter(
        in, "nv_inference_count",
        "Number of inferences performed (does not include cached requests)",
        [](const ModelStatsSnapshot& s) { return static_cast<double>(s.inference_count); }));
    out.push_back(PerModelCounter(
        in, "nv_inference_exec_count",
        "Number of model executions performed (does not include cached requests)",
        [](const ModelStatsSnapshot& s) { return static_cast<double>(s.execution_count); }));
    if (config.counter_latencies) {
      out.push_back(PerModelCounter(
          in, "nv_inference_request_duration_us",
          "Cumulative inference request duration in microseconds (includes cached requests)",
          [](const ModelStatsSnapshot& s) { return Us(s.success.ns); }));
      out.push_back(PerModelCounter(
          in, "nv_inference_queue_duration_us",
          "Cumulative inference queuing duration in microseconds (includes cached requests)",
          [](const ModelStatsSnapshot& s) { return Us(s.queue.ns); }));
      out.push_back(
          PerModelCounter(in, "nv_inference_compute_input_duration_us",
                          "Cumulative compute input duration in microseconds (does "
                          "not include cached requests)",
                          [](const ModelStatsSnapshot& s) { return Us(s.compute_input.ns); }));
      out.push_back(
          PerModelCounter(in, "nv_inference_compute_infer_duration_us",
                          "Cumulative compute inference duration in microseconds "
                          "(does not include cached requests)",
                          [](const ModelStatsSnapshot& s) { return Us(s.compute_infer.ns); }));
      out.push_back(
          PerModelCounter(in, "nv_inference_compute_output_duration_us",
                          "Cumulative inference compute output duration in "
                          "microseconds (does not include cached requests)",
                          [](const ModelStatsSnapshot& s) { return Us(s.compute_output.ns); }));
    }
    AddPerModelCache(in, &out);
    MetricFamily pending = Family("nv_inference_pending_request_count",
                                  "Instantaneous number of pending requests awaiting execution "
                                  "per-model.",
                                  MetricType::Gauge);
    MetricFamily load =
        Family("nv_model_load_duration_secs", "Model load time in seconds", MetricType::Gauge);
    for (const auto& m : in.models) {
      pending.metric.push_back(
          Gauge(ModelLabels(m), static_cast<double>(m.stats.pending_requests)));
      load.metric.push_back(
          Gauge(ModelLabels(m), static_cast<double>(m.stats.load_duration_ns) / 1e9));
    }
    out.push_back(std::move(pending));
    out.push_back(std::move(load));
    AddInstanceHealth(in, &out);
  }
  if (in.cpu) {
    const Labels none;
    MetricFamily util =
        Family("nv_cpu_utilization", "CPU utilization rate [0.0 - 1.0]", MetricType::Gauge);
    util.metric.push_back(Gauge(none, in.cpu->utilization));
    MetricFamily total =
        Family("nv_cpu_memory_total_bytes", "CPU total memory (RAM), in bytes", MetricType::Gauge);
    total.metric.push_back(Gauge(none, in.cpu->memory_total_bytes));
    MetricFamily used =
        Family("nv_cpu_memory_used_bytes", "CPU used memory (RAM), in bytes", MetricType::Gauge);
    used.metric.push_back(Gauge(none, in.cpu->memory_used_bytes));
    out.push_back(std::move(util));
    out.push_back(std::move(total));
    out.push_back(std::move(used));
  }
  if (in.cache) AddCacheWide(*in.cache, &out);
  AddObserved(in, &out);
  AddBackendFamilies(in, &out);
  return out;
}

std::string RenderMetrics(const std::vector<MetricFamily>& families) {
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace nereid
