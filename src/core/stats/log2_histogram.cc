#include "core/stats/log2_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace nereid {

int Log2HistogramBucket(uint64_t ns) {
  const uint64_t us = ns / 1000;
  return std::min(kLog2HistogramBuckets - 1, static_cast<int>(std::bit_width(us)));
}

double Log2HistogramUpperUs(int i) { return std::ldexp(1.0, i); }

double Log2HistogramQuantileUs(const Log2HistogramCounts& counts, double q) {
  uint64_t total = 0;
  for (uint64_t c : counts) total += c;
  if (total == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  // The rank of the wanted value, 1-based; at least the first value.
  const double rank = std::max(1.0, std::ceil(q * static_cast<double>(total)));
  uint64_t seen = 0;
  for (int i = 0; i < kLog2HistogramBuckets; ++i) {
    if (counts[i] == 0) continue;
    if (static_cast<double>(seen + counts[i]) >= rank) {
      const double lower = i == 0 ? 0.0 : Log2HistogramUpperUs(i - 1);
      const double upper = Log2HistogramUpperUs(i);
      const double inside = (rank - static_cast<double>(seen)) / static_cast<double>(counts[i]);
      return lower + (upper - lower) * inside;
    }
    seen += counts[i];
  }
  return Log2HistogramUpperUs(kLog2HistogramBuckets - 1);
}

}  // namespace nereid
