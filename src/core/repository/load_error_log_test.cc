#include "core/repository/load_error_log.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace nereid {
namespace {

TEST(LoadErrorLogTest, StartsEmpty) { EXPECT_TRUE(LoadErrorLog().Recent().empty()); }

TEST(LoadErrorLogTest, KeepsTheNewestInOrder) {
  LoadErrorLog log(3);
  const auto t0 = std::chrono::system_clock::time_point(std::chrono::seconds(100));
  for (int i = 0; i < 5; ++i) {
    log.Record("m" + std::to_string(i), "why " + std::to_string(i), t0 + std::chrono::seconds(i));
  }
  const std::vector<LoadError> recent = log.Recent();
  ASSERT_EQ(recent.size(), 3u);
  EXPECT_EQ(recent[0].model, "m2");
  EXPECT_EQ(recent[0].reason, "why 2");
  EXPECT_EQ(recent[0].time, t0 + std::chrono::seconds(2));
  EXPECT_EQ(recent[2].model, "m4");
}

TEST(LoadErrorLogTest, ZeroCapacityKeepsNothing) {
  LoadErrorLog log(0);
  log.Record("m", "why");
  EXPECT_TRUE(log.Recent().empty());
}

TEST(LoadErrorLogTest, ConcurrentRecordsStayBounded) {
  LoadErrorLog log(8);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&log, t] {
      for (int i = 0; i < 100; ++i) log.Record("m" + std::to_string(t), "why");
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(log.Recent().size(), 8u);
}

}  // namespace
}  // namespace nereid
