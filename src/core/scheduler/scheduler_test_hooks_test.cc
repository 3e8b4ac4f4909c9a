#include "core/scheduler/scheduler_test_hooks.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <limits>

namespace nereid {
namespace {

TEST(ParseDelayCountTest, UnsetIsNoHold) { EXPECT_EQ(ParseDelayCount(nullptr), 0u); }

TEST(ParseDelayCountTest, PlainNumbersAreReadWithoutWarning) {
  std::string warning;
  EXPECT_EQ(ParseDelayCount("4", &warning), 4u);
  EXPECT_EQ(ParseDelayCount("0", &warning), 0u);
  EXPECT_EQ(ParseDelayCount("128", &warning), 128u);
  EXPECT_TRUE(warning.empty()) << warning;
}

TEST(ParseDelayCountTest, ReadAsAtoiReadsIt) {
  std::string warning;
  EXPECT_EQ(ParseDelayCount("5x", &warning), 5u);
  EXPECT_NE(warning.find("read as 5"), std::string::npos) << warning;
  warning.clear();
  EXPECT_EQ(ParseDelayCount("abc", &warning), 0u);
  EXPECT_NE(warning.find("read as 0"), std::string::npos) << warning;
  EXPECT_EQ(ParseDelayCount("  +7", &warning), 7u);
  EXPECT_EQ(ParseDelayCount("", &warning), 0u);
  EXPECT_EQ(ParseDelayCount("3 4", &warning), 3u);
}

TEST(ParseDelayCountTest, HugeValuesSaturateAtIntMax) {
  EXPECT_EQ(ParseDelayCount("99999999999999999999"),
            static_cast<size_t>(std::numeric_limits<int>::max()));
}

TEST(ParseDelayCountTest, NegativeWrapsAsTritonsSizeTDoesAndWarns) {
  std::string warning;
  EXPECT_EQ(ParseDelayCount("-1", &warning), std::numeric_limits<size_t>::max());
  EXPECT_NE(warning.find("holds the scheduler forever"), std::string::npos) << warning;
}

TEST(SchedulerTestHooksTest, ReadsBothVariables) {
  setenv("TRITONSERVER_DELAY_SCHEDULER", "3", 1);
  setenv("TRITONSERVER_BACKLOG_DELAY_SCHEDULER", "2", 1);
  SchedulerTestHooks hooks = SchedulerTestHooks::FromEnvironment();
  EXPECT_EQ(hooks.delay_count, 3u);
  EXPECT_EQ(hooks.backlog_delay_count, 2u);
  unsetenv("TRITONSERVER_DELAY_SCHEDULER");
  unsetenv("TRITONSERVER_BACKLOG_DELAY_SCHEDULER");
  hooks = SchedulerTestHooks::FromEnvironment();
  EXPECT_EQ(hooks.delay_count, 0u);
  EXPECT_EQ(hooks.backlog_delay_count, 0u);
}

}  // namespace
}  // namespace nereid
