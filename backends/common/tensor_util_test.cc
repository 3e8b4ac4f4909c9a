#include "common/tensor_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace nereid::backends {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Encode(std::initializer_list<std::string> elements) {
  std::string out;
  for (const std::string& e : elements) {
    char prefix[kBytesLengthPrefix];
    WriteBytesLength(static_cast<uint32_t>(e.size()), prefix);
    out.append(prefix, kBytesLengthPrefix);
    out += e;
  }
  return out;
}

std::span<const char> Span(const std::string& s) { return {s.data(), s.size()}; }

TEST(BackendTensorUtilTest, ElementCount) {
  EXPECT_EQ(ElementCount(std::vector<int64_t>{}), 1u);
  EXPECT_EQ(ElementCount(std::vector<int64_t>{2, 3, 4}), 24u);
  EXPECT_EQ(ElementCount(std::vector<int64_t>{2, 0, 4}), 0u);
  EXPECT_EQ(ElementCount(std::vector<int64_t>{2, -1}), std::nullopt);
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ElementCount(std::vector<int64_t>{big, big}), std::nullopt);
  EXPECT_EQ(ElementCount(std::vector<int64_t>{0, big, big}), 0u);
}

TEST(BackendTensorUtilTest, WriteBytesLengthIsLittleEndian) {
  char out[4];
  WriteBytesLength(0x04030201u, out);
  EXPECT_EQ(std::string(out, 4), std::string("\x01\x02\x03\x04", 4));
}

TEST(BackendTensorUtilTest, SplitsElements) {
  const std::string data = Encode({"ab", "", std::string("x\0y", 3)});
  std::vector<std::string_view> elements;
  ASSERT_TRUE(SplitBytesElements(Span(data), 3, &elements).ok());
  EXPECT_THAT(elements, ElementsAre("ab", "", std::string_view("x\0y", 3)));
  // Reuse clears the previous result.
  const std::string one = Encode({"z"});
  ASSERT_TRUE(SplitBytesElements(Span(one), 1, &elements).ok());
  EXPECT_THAT(elements, ElementsAre("z"));
}

TEST(BackendTensorUtilTest, EmptyData) {
  std::vector<std::string_view> elements;
  EXPECT_TRUE(SplitBytesElements({}, 0, &elements).ok());
  EXPECT_TRUE(elements.empty());
  EXPECT_FALSE(SplitBytesElements({}, 1, &elements).ok());
}

TEST(BackendTensorUtilTest, TruncatedLengthPrefix) {
  const std::string data = Encode({"ab"}) + std::string("\x01\x00", 2);
  std::vector<std::string_view> elements;
  Status status = SplitBytesElements(Span(data), 2, &elements);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("truncated length prefix"));
}

TEST(BackendTensorUtilTest, LengthPastEnd) {
  std::string data = Encode({"abcd"});
  data.pop_back();
  std::vector<std::string_view> elements;
  Status status = SplitBytesElements(Span(data), 1, &elements);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("runs past the end"));
  // A huge length must not overflow the bounds check.
  const std::string huge(
      "\xff\xff\xff\xff"
      "ab",
      6);
  EXPECT_FALSE(SplitBytesElements(Span(huge), 1, &elements).ok());
}

TEST(BackendTensorUtilTest, CountMismatch) {
  const std::string data = Encode({"a", "b"});
  std::vector<std::string_view> elements;
  Status fewer = SplitBytesElements(Span(data), 3, &elements);
  EXPECT_EQ(fewer.code(), StatusCode::kInvalidArgument);
  Status more = SplitBytesElements(Span(data), 1, &elements);
  EXPECT_EQ(more.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(more.message(), HasSubstr("more than the expected 1"));
  // A count the data cannot possibly hold fails before reserving anything.
  Status absurd = SplitBytesElements(Span(data), std::numeric_limits<size_t>::max(), &elements);
  EXPECT_EQ(absurd.code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace nereid::backends
