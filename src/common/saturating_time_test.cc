#include "common/saturating_time.h"

#include <gtest/gtest.h>

#include <limits>

namespace nereid {
namespace {

TEST(SaturatingTime, AddClampsAtNever) {
  EXPECT_EQ(SaturatingAdd(1, 2), 3u);
  EXPECT_EQ(SaturatingAdd(kNeverNs - 1, 1), kNeverNs);
  EXPECT_EQ(SaturatingAdd(kNeverNs - 1, 2), kNeverNs);
  EXPECT_EQ(SaturatingAdd(kNeverNs, kNeverNs), kNeverNs);
  EXPECT_EQ(SaturatingAdd(0, kNeverNs), kNeverNs);
}

TEST(SaturatingTime, MulClampsAtNever) {
  EXPECT_EQ(SaturatingMul(0, kNeverNs), 0u);
  EXPECT_EQ(SaturatingMul(kNeverNs, 0), 0u);
  EXPECT_EQ(SaturatingMul(7, 6), 42u);
  EXPECT_EQ(SaturatingMul(kNeverNs / 2, 2), kNeverNs - 1);
  EXPECT_EQ(SaturatingMul(kNeverNs / 2 + 1, 2), kNeverNs);
}

TEST(SaturatingTime, MicrosToNanos) {
  EXPECT_EQ(MicrosToNanos(300000), 300000000u);
  EXPECT_EQ(MicrosToNanos(kMaxDurationMicros), kMaxDurationMicros * 1000);
  EXPECT_LE(MicrosToNanos(kMaxDurationMicros),
            static_cast<uint64_t>(std::numeric_limits<int64_t>::max()));
  // 2^63 microseconds: the product that used to wrap to a small number.
  EXPECT_EQ(MicrosToNanos(uint64_t{1} << 63), kNeverNs);
}

TEST(SaturatingTime, SteadyTimePointClampsToTheClock) {
  EXPECT_EQ(SteadyTimePoint(5).time_since_epoch().count(), 5);
  EXPECT_EQ(SteadyTimePoint(kNeverNs), std::chrono::steady_clock::time_point::max());
  // A deadline past the clock's range is "later than now", never "long ago".
  EXPECT_GT(SteadyTimePoint(uint64_t{1} << 63), std::chrono::steady_clock::now());
}

}  // namespace
}  // namespace nereid
