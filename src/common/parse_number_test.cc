#include "common/parse_number.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace nereid {
namespace {

TEST(ParseIntegerTest, AcceptsWholeDecimalNumbers) {
  EXPECT_EQ(ParseInteger<int>("12"), 12);
  EXPECT_EQ(ParseInteger<int>("-7"), -7);
  EXPECT_EQ(ParseInteger<int64_t>("9223372036854775807"), INT64_MAX);
  EXPECT_EQ(ParseInteger<uint32_t>("0"), 0u);
}

TEST(ParseIntegerTest, RefusesTrailingOrLeadingText) {
  EXPECT_EQ(ParseInteger<int>("12abc"), std::nullopt);
  EXPECT_EQ(ParseInteger<int>(" 12"), std::nullopt);
  EXPECT_EQ(ParseInteger<int>("12 "), std::nullopt);
  EXPECT_EQ(ParseInteger<int>("+12"), std::nullopt);
  EXPECT_EQ(ParseInteger<int>("1.5"), std::nullopt);
  EXPECT_EQ(ParseInteger<int>("0x10"), std::nullopt);
  EXPECT_EQ(ParseInteger<int>(""), std::nullopt);
  EXPECT_EQ(ParseInteger<int>("-"), std::nullopt);
}

TEST(ParseIntegerTest, RefusesValuesThatDoNotFit) {
  EXPECT_EQ(ParseInteger<int>("2147483648"), std::nullopt);
  EXPECT_EQ(ParseInteger<int64_t>("9223372036854775808"), std::nullopt);
  EXPECT_EQ(ParseInteger<uint32_t>("-1"), std::nullopt);
}

}  // namespace
}  // namespace nereid
