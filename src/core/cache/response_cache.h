// ResponseCache: where a model version's successful responses are kept, keyed by CacheKey
// (cache_key.h), values in the binary format of cache_value.h. LocalCache (local_cache.h) keeps
// them in this process; RedisCache (redis_cache.h, its own library) in a Redis server shared by
// several Nereid processes.
//
// Thread-safety: every method may be called from any thread, concurrently.
#pragma once

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace nereid {

// The cache-wide figures Triton's local cache reports as nv_cache_* gauges (REFERENCE-2 §8.3).
struct CacheStats {
  uint64_t num_entries = 0;
  uint64_t num_lookups = 0;
  uint64_t num_hits = 0;
  uint64_t num_misses = 0;
  uint64_t num_evictions = 0;
  uint64_t lookup_ns = 0;     // cumulative
  uint64_t insertion_ns = 0;  // cumulative
  double util = 0;            // 0..1, bytes used / capacity (0 where unknown)
};

// The lookup and insertion counters both caches keep, updated from any thread.
struct CacheCounters {
  std::atomic<uint64_t> lookups{0}, hits{0}, misses{0}, lookup_ns{0}, insertion_ns{0};

  void RecordLookup(bool hit, uint64_t ns) {
    lookups.fetch_add(1, std::memory_order_relaxed);
    (hit ? hits : misses).fetch_add(1, std::memory_order_relaxed);
    lookup_ns.fetch_add(ns, std::memory_order_relaxed);
  }
  void RecordInsertion(uint64_t ns) { insertion_ns.fetch_add(ns, std::memory_order_relaxed); }
  // CacheStats with these counters filled in (entries, evictions and util left 0).
  CacheStats Load() const {
    CacheStats s;
    s.num_lookups = lookups.load(std::memory_order_relaxed);
    s.num_hits = hits.load(std::memory_order_relaxed);
    s.num_misses = misses.load(std::memory_order_relaxed);
    s.lookup_ns = lookup_ns.load(std::memory_order_relaxed);
    s.insertion_ns = insertion_ns.load(std::memory_order_relaxed);
    return s;
  }
};

class ResponseCache {
 public:
  virtual ~ResponseCache() = default;
  // The value stored under `hash` (the caller checks that its full key is the one it asked for),
  // or nullopt on a miss. A cache that cannot answer (a lost Redis) answers nullopt.
  virtual std::optional<std::string> Lookup(uint64_t hash) = 0;
  // Stores `value` under `hash`. An entry already there is kept unless `replace` (the caller found
  // it unusable: garbage, or another request's); then false is returned, as Triton's
  // ALREADY_EXISTS (two identical misses in flight). A value that cannot be stored is dropped
  // (logged where useful) and true returned.
  virtual bool Insert(uint64_t hash, std::string value, bool replace) = 0;
  virtual CacheStats Stats() const = 0;
  virtual std::string_view name() const = 0;
};

}  // namespace nereid
