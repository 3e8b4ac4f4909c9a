#include "core/stats/log2_histogram.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(Log2HistogramTest, BucketsArePowersOfTwoMicroseconds) {
  EXPECT_EQ(Log2HistogramBucket(0), 0);
  EXPECT_EQ(Log2HistogramBucket(999), 0);   // under 1 µs
  EXPECT_EQ(Log2HistogramBucket(1000), 1);  // [1, 2) µs
  EXPECT_EQ(Log2HistogramBucket(1999), 1);
  EXPECT_EQ(Log2HistogramBucket(2000), 2);      // [2, 4) µs
  EXPECT_EQ(Log2HistogramBucket(1000000), 10);  // 1000 µs is in [512, 1024)
  EXPECT_EQ(Log2HistogramBucket(UINT64_MAX), kLog2HistogramBuckets - 1);
}

TEST(Log2HistogramTest, EmptyHistogramHasZeroQuantiles) {
  Log2HistogramCounts counts{};
  EXPECT_EQ(Log2HistogramQuantileUs(counts, 0.5), 0);
  EXPECT_EQ(Log2HistogramQuantileUs(counts, 0.99), 0);
}

TEST(Log2HistogramTest, QuantilesInterpolateInsideTheBucket) {
  Log2Histogram h;
  for (int i = 0; i < 90; ++i) h.Record(1500);     // bucket 1: [1, 2) µs
  for (int i = 0; i < 10; ++i) h.Record(300'000);  // bucket 9: [256, 512) µs
  const Log2HistogramCounts counts = h.Load();
  EXPECT_EQ(counts[1], 90u);
  EXPECT_EQ(counts[9], 10u);
  EXPECT_DOUBLE_EQ(Log2HistogramQuantileUs(counts, 0.5), 1.0 + 50.0 / 90.0);  // the 50th of 90
  EXPECT_DOUBLE_EQ(Log2HistogramQuantileUs(counts, 0.9), 2.0);
  EXPECT_DOUBLE_EQ(Log2HistogramQuantileUs(counts, 0.99), 256.0 + 256.0 * 9.0 / 10.0);
  EXPECT_DOUBLE_EQ(Log2HistogramQuantileUs(counts, 1.0), 512.0);
}

TEST(Log2HistogramTest, OutOfRangeQuantilesAreClamped) {
  Log2Histogram h;
  h.Record(5000);  // bucket 3: [4, 8) µs
  const Log2HistogramCounts counts = h.Load();
  EXPECT_DOUBLE_EQ(Log2HistogramQuantileUs(counts, -1), 8.0);  // the first value
  EXPECT_DOUBLE_EQ(Log2HistogramQuantileUs(counts, 7), 8.0);
}

}  // namespace
}  // namespace nereid
