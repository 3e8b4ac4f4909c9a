#include "frontends/http/status_page_data.h"

#include <chrono>

#include "core/server/inference_server.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// A READY version: its counters, batch-size histogram, queue percentiles and instances. A
// version unloaded since the index was read keeps has_stats false.
void FillStatistics(const InferenceServer& server, const std::string& name, StatusPageVersion* v) {
  auto stats = server.GetModelStatistics(name, v->version);
  if (!stats.ok() || stats->empty()) return;
  const ModelStatsSnapshot& s = stats->front().stats;
  v->has_stats = true;
  v->queue_depth = s.pending_requests;
  v->success = s.success.count;
  v->fail = s.fail.count;
  v->inference_count = s.inference_count;
  v->execution_count = s.execution_count;
  for (const BatchStat& b : s.batch_stats) {
    v->batch_histogram.emplace_back(b.batch_size, b.compute_infer.count);
  }
  for (uint64_t c : s.queue_histogram) v->queued_requests += c;
  v->queue_p50_us = Log2HistogramQuantileUs(s.queue_histogram, 0.50);
  v->queue_p90_us = Log2HistogramQuantileUs(s.queue_histogram, 0.90);
  v->queue_p99_us = Log2HistogramQuantileUs(s.queue_histogram, 0.99);
  auto config = server.GetModelConfig(name, v->version);
  if (config.ok()) {
    for (const auto& group : (*config)->instance_group()) v->instances += group.count();
  }
}

}  // namespace

StatusPageData CollectStatusPageData(const InferenceServer& server) {
  StatusPageData data;
  data.server_id = server.Metadata().name;
  data.server_version = server.Metadata().version;
  data.uptime = std::chrono::duration_cast<std::chrono::seconds>(server.Uptime());
  data.now = std::chrono::system_clock::now();
  for (const RepositoryIndexEntry& entry : server.RepositoryIndex(/*ready_only=*/false)) {
    if (data.models.empty() || data.models.back().name != entry.name) {
      data.models.push_back({entry.name, {}});
    }
    if (entry.state.empty()) continue;  // never loaded: the model row alone
    StatusPageVersion v;
    v.version = entry.version;
    v.state = entry.state;
    v.reason = entry.reason;
    if (entry.state == "READY" && entry.version >= 0) FillStatistics(server, entry.name, &v);
    data.models.back().versions.push_back(std::move(v));
  }
  for (LoadError& e : server.RecentLoadErrors()) {
    data.load_errors.push_back({std::move(e.model), e.time, std::move(e.reason)});
  }
  return data;
}

}  // namespace nereid
