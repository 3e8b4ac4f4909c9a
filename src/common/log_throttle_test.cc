#include "common/log_throttle.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

using std::chrono::seconds;

TEST(LogThrottleTest, FirstEventIsLoggedThenOnePerIntervalWithTheCount) {
  LogThrottle t(seconds(10));
  const LogThrottle::Clock::time_point t0{seconds(1000)};
  EXPECT_EQ(t.Allow(t0), 1u);
  EXPECT_EQ(t.Allow(t0 + seconds(1)), 0u);
  EXPECT_EQ(t.Allow(t0 + seconds(9)), 0u);
  EXPECT_EQ(t.Allow(t0 + seconds(10)), 3u);  // itself and the two held back
  EXPECT_EQ(t.Allow(t0 + seconds(11)), 0u);
  EXPECT_EQ(t.Allow(t0 + seconds(25)), 2u);
}

TEST(LogThrottleTest, QuietPeriodsDoNotAccumulate) {
  LogThrottle t(seconds(1));
  const LogThrottle::Clock::time_point t0{seconds(5)};
  EXPECT_EQ(t.Allow(t0), 1u);
  EXPECT_EQ(t.Allow(t0 + seconds(100)), 1u);
}

}  // namespace
}  // namespace nereid
