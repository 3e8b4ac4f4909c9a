// Log2Histogram: a lock-free distribution of durations in power-of-two microsecond buckets, cheap
// enough for the request path (one relaxed atomic increment), from which the status page
// estimates percentiles (docs/operations.md, "Status page").
//
// Bucket 0 holds durations under 1 µs; bucket i (1 <= i < kLog2HistogramBuckets - 1) holds
// [2^(i-1), 2^i) µs; the last bucket holds everything from 2^(kLog2HistogramBuckets - 2) µs up.
//
// Thread-safety: Record and Load may run concurrently from any thread; a Load racing a Record may
// or may not see it, and every bucket on its own is exact.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace nereid {

inline constexpr int kLog2HistogramBuckets = 32;  // the last one starts at 2^30 µs (~18 min)
using Log2HistogramCounts = std::array<uint64_t, kLog2HistogramBuckets>;

// The bucket of a duration of `ns` nanoseconds.
int Log2HistogramBucket(uint64_t ns);
// The upper bound of bucket `i` in microseconds (2^i); the last bucket's lower bound doubled.
double Log2HistogramUpperUs(int i);

// An estimate of quantile `q` (0 < q <= 1) in microseconds: the bucket holding the q-th value,
// interpolated linearly inside it. 0 when `counts` is empty.
double Log2HistogramQuantileUs(const Log2HistogramCounts& counts, double q);

class Log2Histogram {
 public:
  void Record(uint64_t ns) {
    buckets_[Log2HistogramBucket(ns)].fetch_add(1, std::memory_order_relaxed);
  }
  Log2HistogramCounts Load() const {
    Log2HistogramCounts out{};
    for (int i = 0; i < kLog2HistogramBuckets; ++i) {
      out[i] = buckets_[i].load(std::memory_order_relaxed);
    }
    return out;
  }

 private:
  std::array<std::atomic<uint64_t>, kLog2HistogramBuckets> buckets_{};
};

}  // namespace nereid
