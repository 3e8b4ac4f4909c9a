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

TEST(NameSetTest, RepeatsAcrossTheSwitchFromInlineNamesToHashing) {
  NameSet s;
  for (int i = 0; i < 8; ++i) ASSERT_TRUE(s.Insert("input_" + std::to_string(i))) << i;
  EXPECT_FALSE(s.Insert("input_7"));
  EXPECT_TRUE(s.Insert("a name longer than the inline string buffer"));  // the 9th: hashing
  for (int i = 0; i < 8; ++i) EXPECT_FALSE(s.Insert("input_" + std::to_string(i))) << i;
  EXPECT_FALSE(s.Insert("a name longer than the inline string buffer"));
  EXPECT_TRUE(s.Insert("input_8"));
}

}  // namespace
}  // namespace nereid
