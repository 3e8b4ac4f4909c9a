#include "core/tensor/shape.h"

#include <gtest/gtest.h>

#include <limits>

namespace nereid {
namespace {

TEST(ShapeTest, ElementCount) {
  EXPECT_EQ(ElementCount(Shape{}), 1);
  EXPECT_EQ(ElementCount(Shape{2, 3, 4}), 24);
  EXPECT_EQ(ElementCount(Shape{2, 0}), 0);
  EXPECT_FALSE(ElementCount(Shape{2, -1}).has_value());
  const int64_t big = std::numeric_limits<int64_t>::max() / 2;
  EXPECT_FALSE(ElementCount(Shape{big, 3}).has_value());
}

TEST(ShapeTest, FixedByteSize) {
  EXPECT_EQ(*FixedByteSize(DataType::kFp32, Shape{2, 2}, "x"), 16u);
  EXPECT_EQ(*FixedByteSize(DataType::kBool, Shape{3}, "x"), 3u);
  EXPECT_FALSE(FixedByteSize(DataType::kBytes, Shape{3}, "x").ok());
  EXPECT_FALSE(FixedByteSize(DataType::kFp64, Shape{-1}, "x").ok());
  const int64_t big = std::numeric_limits<int64_t>::max() / 4;
  auto s = FixedByteSize(DataType::kFp64, Shape{big}, "input 'A'");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("input 'A'"), std::string::npos);
}

TEST(ShapeTest, MatchesAndToString) {
  EXPECT_TRUE(ShapeMatches(Shape{4, 7}, Shape{4, -1}));
  EXPECT_FALSE(ShapeMatches(Shape{4, 7}, Shape{4, 6}));
  EXPECT_FALSE(ShapeMatches(Shape{4}, Shape{4, -1}));
  EXPECT_EQ(ShapeToString(Shape{-1, 16}), "[-1,16]");
  EXPECT_EQ(ShapeToString(Shape{}), "[]");
}

TEST(ShapeTest, LongShapeIsCutInMessages) {
  const std::string s = ShapeToString(Shape(100000, 1));
  EXPECT_LT(s.size(), 200u) << s;
  EXPECT_EQ(s.substr(0, 6), "[1,1,1");
  const std::string tail = ",...] (100000 dims)";
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail) << s;
}

}  // namespace
}  // namespace nereid
