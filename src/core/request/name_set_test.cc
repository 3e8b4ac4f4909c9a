#include "core/request/name_set.h"

#include <gtest/gtest.h>

#include <string>

namespace nereid {
namespace {

TEST(NameSetTest, FindsRepeatsBeforeAndAfterSwitchingToHashing) {
  NameSet s;
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(s.Insert("n" + std::to_string(i))) << i;
  for (int i = 0; i < 1000; ++i) ASSERT_FALSE(s.Insert("n" + std::to_string(i))) << i;
  NameSet small;
  EXPECT_TRUE(small.Insert("a"));
  EXPECT_TRUE(small.Insert("b"));
  EXPECT_FALSE(small.Insert("a"));
  EXPECT_TRUE(small.Insert(""));
  EXPECT_FALSE(small.Insert(""));
}

}  // namespace
}  // namespace nereid
