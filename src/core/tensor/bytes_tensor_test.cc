#include "core/tensor/bytes_tensor.h"

#include <gtest/gtest.h>

#include <vector>

namespace nereid {
namespace {

TEST(BytesTensorTest, RoundTrip) {
  std::string data;
  AppendBytesElement("abc", &data);
  AppendBytesElement("", &data);
  AppendBytesElement(std::string("x\0y", 3), &data);
  EXPECT_EQ(data.size(), 4u + 3 + 4 + 4 + 3);
  std::vector<std::string> seen;
  ASSERT_TRUE(ForEachBytesElement(data, [&](std::string_view e) { seen.emplace_back(e); }).ok());
  EXPECT_EQ(seen, (std::vector<std::string>{"abc", "", std::string("x\0y", 3)}));
  EXPECT_EQ(*CountBytesElements(data), 3);
}

TEST(BytesTensorTest, TruncatedPrefixIsAnError) {
  const std::string data("\x03\x00", 2);
  auto n = CountBytesElements(data);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().code(), StatusCode::kInvalidArgument);
}

TEST(BytesTensorTest, LengthPastEndIsAnError) {
  std::string data("\xff\xff\xff\x7f" "ab", 6);
  auto n = CountBytesElements(data);
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("past the end"), std::string::npos);
}

TEST(BytesTensorTest, EmptyDataHasNoElements) { EXPECT_EQ(*CountBytesElements({}), 0); }

}  // namespace
}  // namespace nereid
