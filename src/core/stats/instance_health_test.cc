#include "core/stats/instance_health.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace nereid {
namespace {

TEST(InstanceHealthTest, NoInstancesIsNeverUnavailable) {
  InstanceHealth h;
  EXPECT_FALSE(h.UnavailableReason().has_value());
  h.Report(3, false, "ignored");  // unknown index
  EXPECT_FALSE(h.UnavailableReason().has_value());
  EXPECT_EQ(h.counts().restarts, 0u);
}

TEST(InstanceHealthTest, UnavailableOnlyWhenNoInstanceIsHealthy) {
  InstanceHealth h;
  const size_t a = h.Add("m_0_0");
  const size_t b = h.Add("m_0_1");
  h.Report(a, false, "stub process of instance 'm_0_0' is restarting");
  EXPECT_FALSE(h.UnavailableReason().has_value());
  EXPECT_EQ(h.counts().healthy, 1u);
  h.Report(b, false, "stub process of instance 'm_0_1' is restarting");
  ASSERT_TRUE(h.UnavailableReason().has_value());
  EXPECT_EQ(*h.UnavailableReason(), "stub process of instance 'm_0_0' is restarting");
  EXPECT_EQ(h.counts().healthy, 0u);
  h.Report(b, true, "");
  EXPECT_FALSE(h.UnavailableReason().has_value());
  const InstanceHealth::Counts c = h.counts();
  EXPECT_EQ(c.instances, 2u);
  EXPECT_EQ(c.healthy, 1u);
  EXPECT_EQ(c.restarts, 2u);
}

TEST(InstanceHealthTest, RepeatedUnhealthyReportsCountOneRestart) {
  InstanceHealth h;
  const size_t a = h.Add("m_0_0");
  h.Report(a, false, "restarting");
  h.Report(a, false, "restart failed");
  EXPECT_EQ(h.counts().restarts, 1u);
  EXPECT_EQ(*h.UnavailableReason(), "restart failed");
  h.Report(a, true, "");
  h.Report(a, true, "");
  h.Report(a, false, "restarting");
  EXPECT_EQ(h.counts().restarts, 2u);
}

TEST(InstanceHealthTest, ConcurrentReports) {
  InstanceHealth h;
  const size_t a = h.Add("m_0_0");
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&h, a] {
      for (int i = 0; i < 1000; ++i) {
        h.Report(a, false, "x");
        h.Report(a, true, "");
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_GE(h.counts().restarts, 1000u);
  EXPECT_LE(h.counts().restarts, 4000u);
  EXPECT_FALSE(h.UnavailableReason().has_value());
}

}  // namespace
}  // namespace nereid
