#include "frontends/http/json_tensor_data.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontends/http/float16.h"

namespace nereid {
namespace {

TEST(Float16Test, KnownHalfValues) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);  // largest half
  EXPECT_EQ(FloatToHalf(65519.0f), 0x7bff);  // rounds down
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to infinity
  EXPECT_EQ(FloatToHalf(1e10f), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -24)), 0x0001);  // smallest subnormal
  EXPECT_EQ(FloatToHalf(std::ldexp(1.0f, -25)), 0x0000);  // tie to even
  EXPECT_EQ(FloatToHalf(std::ldexp(3.0f, -26)), 0x0001);
  EXPECT_EQ(FloatToHalf(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie to even (down)
  EXPECT_EQ(FloatToHalf(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie to even (up)
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(std::nanf("")) & 0x7c00, 0x7c00);
  EXPECT_NE(FloatToHalf(std::nanf("")) & 0x3ff, 0);
}

TEST(Float16Test, HalfRoundTripsEveryValue) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    const float f = HalfToFloat(v);
    if (std::isnan(f)) {
      EXPECT_EQ(v & 0x7c00, 0x7c00);
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), v) << h;
  }
}

TEST(Float16Test, Bfloat16) {
  EXPECT_EQ(FloatToBfloat16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBfloat16(-1.5f), 0xbfc0);
  EXPECT_EQ(Bfloat16ToFloat(0x3fc0), 1.5f);
  EXPECT_EQ(FloatToBfloat16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);      // tie to even
  EXPECT_EQ(FloatToBfloat16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);  // tie to even
  EXPECT_TRUE(std::isnan(Bfloat16ToFloat(FloatToBfloat16(std::nanf("")))));
  for (uint32_t b = 0; b <= 0xffff; ++b) {
    const float f = Bfloat16ToFloat(static_cast<uint16_t>(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(FloatToBfloat16(f), b);
    }
  }
}

TEST(JsonTensorAppenderTest, RangeChecks) {
  std::string out;
  JsonTensorAppender u16(DataType::kUint16, &out);
  EXPECT_TRUE(u16.AppendUint(65535).ok());
  EXPECT_FALSE(u16.AppendUint(65536).ok());
  EXPECT_FALSE(u16.AppendInt(-1).ok());
  EXPECT_TRUE(u16.AppendInt(3).ok());
  EXPECT_FALSE(u16.AppendDouble(1.0).ok());
  EXPECT_FALSE(u16.AppendBool(true).ok());
  EXPECT_FALSE(u16.AppendString("1").ok());
  EXPECT_EQ(u16.count(), 2);
  EXPECT_EQ(out.size(), 4u);

  JsonTensorAppender i64(DataType::kInt64, &out);
  EXPECT_TRUE(i64.AppendUint(9223372036854775807ull).ok());
  EXPECT_FALSE(i64.AppendUint(9223372036854775808ull).ok());

  JsonTensorAppender u64(DataType::kUint64, &out);
  EXPECT_TRUE(u64.AppendUint(std::numeric_limits<uint64_t>::max()).ok());
  EXPECT_FALSE(u64.AppendInt(-5).ok());

  JsonTensorAppender b(DataType::kBool, &out);
  EXPECT_FALSE(b.AppendInt(1).ok());
  EXPECT_FALSE(b.AppendUint(0).ok());
  EXPECT_TRUE(b.AppendBool(false).ok());
}

TEST(WriteTensorJsonTest, WritesFlatArrays) {
  std::string json;
  StringOutputStream stream(&json);
  JsonWriter w(stream);
  const int16_t data[4] = {1, -2, 3, -4};
  ASSERT_TRUE(WriteTensorJson(DataType::kInt16,
                              std::span<const char>(reinterpret_cast<const char*>(data), 8), 4, "x",
                              w)
                  .ok());
  EXPECT_EQ(json, "[1,-2,3,-4]");
}

}  // namespace
}  // namespace nereid
