#include "common/usable_cpus.h"

#include <gtest/gtest.h>
#include <sched.h>

namespace nereid {
namespace {

TEST(UsableCpusTest, FollowsTheAffinityMask) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(UsableCpus(), CPU_COUNT(&all));
  int first = 0;
  while (!CPU_ISSET(first, &all)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(UsableCpus(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
}

}  // namespace
}  // namespace nereid
