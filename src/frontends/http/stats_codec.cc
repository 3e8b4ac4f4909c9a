#include "frontends/http/stats_codec.h"

#include "frontends/http/json_writer.h"

namespace nereid {
namespace {

void WriteDuration(JsonWriter& w, std::string_view key, const DurationStat& d) {
  WriteJsonKey(w, key);
  w.StartObject();
  WriteJsonKey(w, "count");
  w.Uint64(d.count);
  WriteJsonKey(w, "ns");
  w.Uint64(d.ns);
  w.EndObject();
}

void WriteInferenceStats(JsonWriter& w, const ModelStatsSnapshot& s) {
  w.StartObject();
  WriteDuration(w, "success", s.success);
  WriteDuration(w, "fail", s.fail);
  WriteDuration(w, "queue", s.queue);
  WriteDuration(w, "compute_input", s.compute_input);
  WriteDuration(w, "compute_infer", s.compute_infer);
  WriteDuration(w, "compute_output", s.compute_output);
  WriteDuration(w, "cache_hit", s.cache_hit);
  WriteDuration(w, "cache_miss", s.cache_miss);
  w.EndObject();
}

void WriteResponseStats(JsonWriter& w, const ModelStatsSnapshot& s) {
  w.StartObject();
  for (const auto& [key, r] : s.response_stats) {
    WriteJsonKey(w, key);
    w.StartObject();
    WriteDuration(w, "compute_infer", r.compute_infer);
    WriteDuration(w, "compute_output", r.compute_output);
    WriteDuration(w, "success", r.success);
    WriteDuration(w, "fail", r.fail);
    WriteDuration(w, "empty_response", r.empty_response);
    WriteDuration(w, "cancel", r.cancel);
    w.EndObject();
  }
  w.EndObject();
}

void WriteBatchStats(JsonWriter& w, const ModelStatsSnapshot& s) {
  w.StartArray();
  for (const BatchStat& b : s.batch_stats) {
    w.StartObject();
    WriteJsonKey(w, "batch_size");
    w.Uint64(b.batch_size);
    WriteDuration(w, "compute_input", b.compute_input);
    WriteDuration(w, "compute_infer", b.compute_infer);
    WriteDuration(w, "compute_output", b.compute_output);
    w.EndObject();
  }
  w.EndArray();
}

void WriteMemoryUsage(JsonWriter& w, const ModelStatsSnapshot& s) {
  w.StartArray();
  for (const MemoryUsage& m : s.memory_usage) {
    w.StartObject();
    WriteJsonKey(w, "type");
    WriteJsonString(w, m.type);
    WriteJsonKey(w, "id");
    w.Int64(m.id);
    WriteJsonKey(w, "byte_size");
    w.Uint64(m.byte_size);
    w.EndObject();
  }
  w.EndArray();
}

}  // namespace

std::string EncodeModelStatistics(const std::vector<ModelVersionStatistics>& stats) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartObject();
  WriteJsonKey(w, "model_stats");
  w.StartArray();
  for (const ModelVersionStatistics& m : stats) {
    const ModelStatsSnapshot& s = m.stats;
    w.StartObject();
    WriteJsonKey(w, "name");
    WriteJsonString(w, m.name);
    WriteJsonKey(w, "version");
    WriteJsonString(w, std::to_string(m.version));
    WriteJsonKey(w, "last_inference");
    w.Uint64(s.last_inference_ms);
    WriteJsonKey(w, "inference_count");
    w.Uint64(s.inference_count);
    WriteJsonKey(w, "execution_count");
    w.Uint64(s.execution_count);
    WriteJsonKey(w, "inference_stats");
    WriteInferenceStats(w, s);
    WriteJsonKey(w, "response_stats");
    WriteResponseStats(w, s);
    WriteJsonKey(w, "batch_stats");
    WriteBatchStats(w, s);
    WriteJsonKey(w, "memory_usage");
    WriteMemoryUsage(w, s);
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return out;
}

}  // namespace nereid
