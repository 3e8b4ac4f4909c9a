#include "core/cache/cache_value.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

std::vector<InferOutput> Outputs() {
  InferOutput a;
  a.name = "OUT";
  a.data_type = DataType::kFp32;
  a.shape = {1, 2};
  a.data = std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8);
  InferOutput b;
  b.name = "S";
  b.data_type = DataType::kBytes;
  b.shape = {1};
  b.data = std::string("\x02\0\0\0hi", 6);
  return {a, b};
}

std::string Encoded() {
  auto outs = Outputs();
  std::vector<std::span<const char>> data;
  for (auto& o : outs) data.emplace_back(o.data.data(), o.data.size());
  return EncodeCacheValue("the key", outs, data);
}

TEST(CacheValueTest, RoundTrip) {
  const std::string bytes = Encoded();
  EXPECT_EQ(bytes[0], 1);  // the version byte
  auto v = DecodeCacheValue(bytes);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->key, "the key");
  ASSERT_EQ(v->outputs.size(), 2u);
  EXPECT_EQ(v->outputs[0].name, "OUT");
  EXPECT_EQ(v->outputs[0].data_type, DataType::kFp32);
  EXPECT_EQ(v->outputs[0].shape, (Shape{1, 2}));
  EXPECT_EQ(v->outputs[0].data, Outputs()[0].data);
  EXPECT_EQ(v->outputs[1].data, Outputs()[1].data);
}

TEST(CacheValueTest, EveryTruncationIsRejected) {
  const std::string bytes = Encoded();
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeCacheValue(std::span<const char>(bytes.data(), n)).ok()) << n;
  }
  EXPECT_FALSE(DecodeCacheValue(bytes + "x").ok());
}

TEST(CacheValueTest, UnknownVersionAndDatatypeAreRejected) {
  std::string bytes = Encoded();
  bytes[0] = 2;
  auto v = DecodeCacheValue(bytes);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find("unknown version 2"), std::string::npos);
  bytes = Encoded();
  // version(1) + key len(8) + key(7) + count(4) + name len(4) + name(3) = datatype offset 27.
  bytes[27] = 0;
  EXPECT_FALSE(DecodeCacheValue(bytes).ok());
  bytes[27] = static_cast<char>(200);
  EXPECT_FALSE(DecodeCacheValue(bytes).ok());
}

TEST(CacheValueTest, HugeCountsDoNotAllocate) {
  std::string bytes("\x01", 1);
  bytes.append(8, '\0');                // empty key
  bytes.append("\xff\xff\xff\xff", 4);  // 4 billion outputs
  EXPECT_FALSE(DecodeCacheValue(bytes).ok());
}

}  // namespace
}  // namespace nereid
