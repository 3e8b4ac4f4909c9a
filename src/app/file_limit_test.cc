#include "app/file_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace nereid {
namespace {

TEST(FileLimitTest, DefaultMaxConnectionsIsThreeQuartersOfTheLimitWithinBounds) {
  EXPECT_EQ(DefaultHttpMaxConnections(1024), 768u);
  EXPECT_EQ(DefaultHttpMaxConnections(4096), 3072u);
  EXPECT_EQ(DefaultHttpMaxConnections(8), 16u);
  EXPECT_EQ(DefaultHttpMaxConnections(1u << 20), 16384u);
  EXPECT_EQ(DefaultHttpMaxConnections(UINT64_MAX), 16384u);
  EXPECT_EQ(DefaultHttpMaxConnections(0), 1024u);
}

TEST(FileLimitTest, RaiseOpenFileLimitReachesTheHardLimit) {
  const uint64_t soft = RaiseOpenFileLimit();
  rlimit rl{};
  ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
  EXPECT_EQ(soft, rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur);
  if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max <= (rlim_t{1} << 20)) {
    EXPECT_EQ(rl.rlim_cur, rl.rlim_max);
  }
}

}  // namespace
}  // namespace nereid
