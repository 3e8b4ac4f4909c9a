#include "core/scheduler/caching_scheduler.h"

#include <span>
#include <vector>

#include "common/logging.h"
#include "core/cache/cache_key.h"
#include "core/cache/cache_value.h"

namespace nereid {
namespace {

// The bytes of each output of a successful response: its own, or (for an output the backend
// wrote straight into the client's shared memory) the region's. nullopt when an output's size
// cannot be known (BYTES in shared memory): such a response is not cached.
std::optional<std::vector<std::span<const char>>> OutputBytes(const InferenceResponse& r) {
  std::vector<std::span<const char>> data;
  data.reserve(r.outputs.size());
  for (const InferOutput& o : r.outputs) {
    if (!o.in_shared_memory) {
      data.emplace_back(o.data.data(), o.data.size());
      continue;
    }
    if (r.request == nullptr || o.data_type == DataType::kBytes) return std::nullopt;
    std::optional<std::span<char>> region;
    for (const RequestedOutput& ro : r.request->outputs) {
      if (ro.name == o.name) region = ro.shared_memory;
    }
    uint64_t bytes = DataTypeByteSize(o.data_type);
    for (int64_t d : o.shape) bytes *= static_cast<uint64_t>(d);
    if (!region || region->size() < bytes) return std::nullopt;
    data.emplace_back(region->data(), bytes);
  }
  return data;
}

}  // namespace

CachingScheduler::CachingScheduler(const ModelInfo* info, ModelStats* stats,
                                   std::shared_ptr<ResponseCache> cache,
                                   std::unique_ptr<Scheduler> inner)
    : info_(info), stats_(stats), cache_(std::move(cache)), inner_(std::move(inner)) {}

void CachingScheduler::Enqueue(SchedulerJob&& job, bool allow_inline) {
  const uint64_t queue_start = NowNs();
  auto key = std::make_shared<CacheKey>(MakeCacheKey(info_->name, info_->version, *job.request));
  std::optional<std::string> value = cache_->Lookup(key->hash);
  bool replace = false;  // the entry under this hash is unusable: the insert replaces it
  if (value) {
    replace = true;
    StatusOr<CacheValue> decoded = DecodeCacheValue(*value);
    if (!decoded.ok()) {
      LOG_WARNING("response cache '{}': ignoring the value of key [{}]: {}", cache_->name(),
                  key->hash, decoded.status().message());
    } else if (decoded->key == key->full) {
      auto response = std::make_unique<InferenceResponse>();
      response->model_name = info_->name;
      response->model_version = info_->version;
      response->id = job.request->id;
      response->outputs = std::move(decoded->outputs);
      response->request = std::move(job.request);
      const uint64_t lookup_end = NowNs();
      stats_->RecordCacheHit(job.request_start_ns, queue_start, queue_start, lookup_end);
      job.done(std::move(response));
      return;
    }
    // Another request's entry under the same hash (a collision): a miss, never its answer.
  }
  const uint64_t lookup_ns = NowNs() - queue_start;
  InferCallback done = std::move(job.done);
  job.done = [this, key, lookup_ns, replace,
              done = std::move(done)](StatusOr<std::unique_ptr<InferenceResponse>> result) mutable {
    if (result.ok()) {
      const uint64_t insert_start = NowNs();
      bool inserted = true;
      if (auto data = OutputBytes(**result)) {
        inserted = cache_->Insert(key->hash, EncodeCacheValue(key->full, (*result)->outputs, *data),
                                  replace);
      }
      // An identical request inserted first: neither a hit nor a miss (Triton #5384).
      if (inserted) stats_->RecordCacheMiss(lookup_ns + (NowNs() - insert_start));
    }
    done(std::move(result));
  };
  inner_->Enqueue(std::move(job), allow_inline);
}

}  // namespace nereid
