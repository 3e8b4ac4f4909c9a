// Saturating arithmetic for durations and deadlines in steady-clock nanoseconds (NowNs).
//
// Configured delays and timeouts are microseconds in a uint64; a deadline is "now + delay". With
// values near 2^63 a plain `us * 1000` or `now + delay` wraps around, the deadline lands in the
// past and a waiting thread spins. Every deadline is computed with these helpers instead: a sum
// or product that does not fit is clamped to "never" (UINT64_MAX), and a time point handed to a
// condition variable is clamped to what std::chrono::steady_clock can represent.
//
// Thread-safety: pure functions.
#pragma once

#include <chrono>
#include <cstdint>
#include <limits>

namespace nereid {

inline constexpr uint64_t kNeverNs = std::numeric_limits<uint64_t>::max();

// The largest microsecond duration whose nanosecond form fits an int64 (what steady_clock and
// Triton's own arithmetic hold): about 292 years. Configuration validation refuses larger ones.
inline constexpr uint64_t kMaxDurationMicros =
    static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / 1000;

constexpr uint64_t SaturatingAdd(uint64_t a, uint64_t b) {
  return a > kNeverNs - b ? kNeverNs : a + b;
}

constexpr uint64_t SaturatingMul(uint64_t a, uint64_t b) {
  return b != 0 && a > kNeverNs / b ? kNeverNs : a * b;
}

constexpr uint64_t MicrosToNanos(uint64_t us) { return SaturatingMul(us, 1000); }

// `ns` (NowNs time base) as a steady_clock time point, clamped to the clock's largest value.
inline std::chrono::steady_clock::time_point SteadyTimePoint(uint64_t ns) {
  constexpr uint64_t kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  return std::chrono::steady_clock::time_point(
      std::chrono::nanoseconds(static_cast<int64_t>(ns > kMax ? kMax : ns)));
}

}  // namespace nereid
