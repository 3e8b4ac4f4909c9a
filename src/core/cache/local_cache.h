// LocalCache: Triton's "local" response cache: an LRU bounded in bytes, in this process.
//
// Sharded by key hash so concurrent hits on different keys do not wait for one another: each
// shard has its own mutex, LRU list and an equal part of the byte budget. The number of shards
// keeps every shard at least kMinShardBytes, so a small cache is one shard and behaves exactly
// as one LRU. An entry larger than its shard's budget is not stored (Triton: "Requested
// byte_size: N is greater than total cache size: M", logged at verbose level).
#pragma once

#include <atomic>
#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/thread_annotations.h"
#include "core/cache/response_cache.h"
#include "nereid/status.h"

namespace nereid {

class LocalCache : public ResponseCache {
 public:
  static constexpr uint64_t kMinShardBytes = 1 << 20;
  static constexpr size_t kMaxShards = 16;

  // `capacity_bytes` > 0. Counts an entry as its value's size plus a fixed overhead.
  explicit LocalCache(uint64_t capacity_bytes);

  std::optional<std::string> Lookup(uint64_t hash) override;
  bool Insert(uint64_t hash, std::string value, bool replace) override;
  CacheStats Stats() const override;
  std::string_view name() const override { return "local"; }

  static constexpr uint64_t kEntryOverhead = 64;

 private:
  struct Entry {
    uint64_t hash;
    std::shared_ptr<const std::string> value;
  };
  struct Shard {
    Mutex mu;
    std::list<Entry> lru GUARDED_BY(mu);  // front: most recently used
    std::unordered_map<uint64_t, std::list<Entry>::iterator> index GUARDED_BY(mu);
    uint64_t used GUARDED_BY(mu) = 0;
  };
  Shard& ShardOf(uint64_t hash) { return shards_[(hash >> 7) % shards_.size()]; }
  static uint64_t Cost(const std::string& value) { return value.size() + kEntryOverhead; }

  uint64_t capacity_;
  uint64_t shard_capacity_;
  std::vector<Shard> shards_;
  std::atomic<uint64_t> entries_{0}, used_{0}, evictions_{0};
  CacheCounters counters_;
};

}  // namespace nereid
