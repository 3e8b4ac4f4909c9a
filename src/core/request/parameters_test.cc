#include "core/request/parameters.h"

#include <gtest/gtest.h>

#include <string>

namespace nereid {
namespace {

std::string Key(int i) { return "k" + std::to_string(i); }

TEST(ParametersTest, SetFindReplaceKeepInsertionOrder) {
  Parameters p;
  p.Set("b", int64_t{1});
  p.Set("a", std::string("x"));
  p.Set("b", true);  // replaces in place
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p.begin()->first, "b");
  EXPECT_EQ(GetBool(p, "b"), true);
  EXPECT_EQ(p.Find("c"), nullptr);
}

// Past the threshold the hash index answers; results must not change as it is built, grown and
// rebuilt by Remove.
TEST(ParametersTest, IndexedMapBehavesLikeTheSmallOne) {
  Parameters p;
  constexpr int kCount = 1000;
  for (int i = 0; i < kCount; ++i) p.Set(Key(i), int64_t{i});
  for (int i = 0; i < kCount; ++i) p.Set(Key(i), int64_t{i * 2});  // replace, no growth
  ASSERT_EQ(p.size(), static_cast<size_t>(kCount));
  for (int i = 0; i < kCount; ++i) ASSERT_EQ(GetInt(p, Key(i)), i * 2) << i;
  EXPECT_TRUE(p.Remove(Key(0)));
  EXPECT_FALSE(p.Remove(Key(0)));
  EXPECT_EQ(p.Find(Key(0)), nullptr);
  EXPECT_EQ(GetInt(p, Key(kCount - 1)), (kCount - 1) * 2);
  int i = 1;
  for (const auto& [k, v] : p) EXPECT_EQ(k, Key(i++));
  // Shrinking back under the threshold falls back to scanning, still consistent.
  for (int j = 1; j < kCount - 2; ++j) ASSERT_TRUE(p.Remove(Key(j)));
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(GetInt(p, Key(kCount - 2)), (kCount - 2) * 2);
  p.Set("new", false);
  EXPECT_EQ(GetBool(p, "new"), false);
}

TEST(ParametersTest, CopiesAreIndependent) {
  Parameters a;
  for (int i = 0; i < 20; ++i) a.Set(Key(i), int64_t{i});
  Parameters b = a;
  b.Set(Key(3), int64_t{-3});
  EXPECT_EQ(GetInt(a, Key(3)), 3);
  EXPECT_EQ(GetInt(b, Key(3)), -3);
}

}  // namespace
}  // namespace nereid
