#include "core/cache/local_cache.h"

#include <algorithm>

#include "common/logging.h"
#include "core/stats/model_stats.h"

namespace nereid {

LocalCache::LocalCache(uint64_t capacity_bytes)
    : capacity_(capacity_bytes),
      shard_capacity_(0),
      shards_(std::clamp<uint64_t>(capacity_bytes / kMinShardBytes, 1, kMaxShards)) {
  shard_capacity_ = capacity_ / shards_.size();
}

std::optional<std::string> LocalCache::Lookup(uint64_t hash) {
  const uint64_t start = NowNs();
  std::shared_ptr<const std::string> found;
  {
    Shard& s = ShardOf(hash);
    MutexLock lock(s.mu);
    auto it = s.index.find(hash);
    if (it != s.index.end()) {
      s.lru.splice(s.lru.begin(), s.lru, it->second);
      found = it->second->value;
    }
  }
  // The copy is made outside the shard's lock: a large hit does not hold up its neighbours.
  std::optional<std::string> out;
  if (found) out = *found;
  counters_.RecordLookup(found != nullptr, NowNs() - start);
  return out;
}

bool LocalCache::Insert(uint64_t hash, std::string value, bool replace) {
  const uint64_t start = NowNs();
  const uint64_t cost = Cost(value);
  if (cost > shard_capacity_) {
    LOG_VERBOSE(1, "Requested byte_size: {} is greater than total cache size: {}", cost,
                shard_capacity_);
    return true;
  }
  auto stored = std::make_shared<const std::string>(std::move(value));
  uint64_t evicted = 0;
  int64_t entry_delta = 0;
  int64_t used_delta = 0;
  {
    Shard& s = ShardOf(hash);
    MutexLock lock(s.mu);
    auto it = s.index.find(hash);
    if (it != s.index.end()) {
      // Same hash: the same request raced us here (kept, as Triton), or the caller found the
      // entry unusable (a colliding request's: replaced).
      if (!replace) {
        s.lru.splice(s.lru.begin(), s.lru, it->second);
        return false;
      }
      const uint64_t old = Cost(*it->second->value);
      s.used -= old;
      used_delta -= static_cast<int64_t>(old);
      s.lru.erase(it->second);
      s.index.erase(it);
      --entry_delta;
    }
    while (s.used + cost > shard_capacity_ && !s.lru.empty()) {
      const Entry& victim = s.lru.back();
      const uint64_t c = Cost(*victim.value);
      s.used -= c;
      used_delta -= static_cast<int64_t>(c);
      s.index.erase(victim.hash);
      s.lru.pop_back();
      ++evicted;
      --entry_delta;
    }
    s.lru.push_front(Entry{hash, std::move(stored)});
    s.index[hash] = s.lru.begin();
    s.used += cost;
    used_delta += static_cast<int64_t>(cost);
    ++entry_delta;
  }
  entries_.fetch_add(static_cast<uint64_t>(entry_delta), std::memory_order_relaxed);
  used_.fetch_add(static_cast<uint64_t>(used_delta), std::memory_order_relaxed);
  evictions_.fetch_add(evicted, std::memory_order_relaxed);
  counters_.RecordInsertion(NowNs() - start);
  return true;
}

CacheStats LocalCache::Stats() const {
  CacheStats s = counters_.Load();
  s.num_entries = entries_.load(std::memory_order_relaxed);
  s.num_evictions = evictions_.load(std::memory_order_relaxed);
  s.util = capacity_ == 0 ? 0.0
                          : static_cast<double>(used_.load(std::memory_order_relaxed)) /
                                static_cast<double>(capacity_);
  return s;
}

}  // namespace nereid
