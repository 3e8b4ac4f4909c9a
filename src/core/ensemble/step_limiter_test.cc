// max_inflight_requests per step (step_limiter.h): waits at the limit, frees on Release, stops
// waiting when cancelled, proceeds after the give-up time, 0 is unlimited, steps are independent.
#include "core/ensemble/step_limiter.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace nereid {
namespace {

using namespace std::chrono_literals;

TEST(StepLimiterTest, ZeroIsUnlimited) {
  StepLimiter l("e", 1, 0);
  for (int i = 0; i < 100; ++i) l.Acquire(0, nullptr);
  EXPECT_EQ(l.Inflight(0), 100u);
}

TEST(StepLimiterTest, WaitsAtTheLimitUntilASlotIsFreed) {
  StepLimiter l("e", 2, 1);
  l.Acquire(0, nullptr);
  l.Acquire(1, nullptr);  // another step has its own counter
  std::atomic<bool> got{false};
  std::thread t([&] {
    l.Acquire(0, nullptr);
    got = true;
  });
  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(got.load());
  l.Release(0);
  t.join();
  EXPECT_TRUE(got.load());
  EXPECT_EQ(l.Inflight(0), 1u);
}

TEST(StepLimiterTest, CancellationStopsTheWait) {
  StepLimiter l("e", 1, 1);
  l.Acquire(0, nullptr);
  std::atomic<bool> cancelled{false};
  std::thread t([&] { l.Acquire(0, [&] { return cancelled.load(); }); });
  std::this_thread::sleep_for(20ms);
  cancelled = true;
  t.join();
  EXPECT_EQ(l.Inflight(0), 2u);  // the slot is taken anyway; the step answers CANCELLED
}

TEST(StepLimiterTest, ProceedsAfterTheGiveUpTime) {
  StepLimiter l("e", 1, 1, 30ms);
  l.Acquire(0, nullptr);
  const auto start = std::chrono::steady_clock::now();
  l.Acquire(0, nullptr);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 30ms);
  EXPECT_EQ(l.Inflight(0), 2u);
}

}  // namespace
}  // namespace nereid
