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

// A finite number the floating type can only hold as infinity is out of range, not Infinity.
TEST(JsonTensorAppenderTest, FloatingOverflowIsOutOfRange) {
  std::string out;
  JsonTensorAppender f32(DataType::kFp32, &out);
  EXPECT_TRUE(f32.AppendDouble(3.4028234663852886e38).ok());  // FLT_MAX
  EXPECT_TRUE(f32.AppendDouble(3.40282347e38).ok());          // FLT_MAX to 9 digits, rounds down
  EXPECT_TRUE(f32.AppendDouble(std::numeric_limits<double>::infinity()).ok());  // explicit
  EXPECT_TRUE(f32.AppendDouble(std::nan("")).ok());
  EXPECT_TRUE(f32.AppendDouble(1e-50).ok());  // underflow to 0 is not an error
  const Status big = f32.AppendDouble(1e39);
  EXPECT_EQ(big.message(), "value 1e+39 is out of range for FP32");
  EXPECT_FALSE(f32.AppendDouble(-1e300).ok());
  EXPECT_FALSE(f32.AppendDouble(0x1.ffffffp+127).ok());  // the halfway tie rounds to infinity
  EXPECT_TRUE(f32.AppendUint(std::numeric_limits<uint64_t>::max()).ok());  // 1.8e19 fits
  EXPECT_EQ(f32.count(), 6);

  JsonTensorAppender f16(DataType::kFp16, &out);
  EXPECT_TRUE(f16.AppendDouble(65504).ok());
  EXPECT_TRUE(f16.AppendDouble(65519.99).ok());
  EXPECT_TRUE(f16.AppendDouble(-std::numeric_limits<double>::infinity()).ok());
  EXPECT_EQ(f16.AppendInt(65520).message(), "value 65520 is out of range for FP16");
  EXPECT_FALSE(f16.AppendDouble(-1e5).ok());
  EXPECT_FALSE(f16.AppendDouble(1e39).ok());

  JsonTensorAppender bf16(DataType::kBf16, &out);
  EXPECT_TRUE(bf16.AppendDouble(3.3e38).ok());
  EXPECT_FALSE(bf16.AppendDouble(3.4028234663852886e38).ok());  // FLT_MAX rounds up in BF16
}

TEST(JsonTensorAppenderTest, WrongTypeNamesTheExpectedKind) {
  std::string out;
  EXPECT_EQ(JsonTensorAppender(DataType::kFp16, &out).AppendBool(true).message(),
            "expected a number for datatype FP16, got a boolean");
  EXPECT_EQ(JsonTensorAppender(DataType::kFp32, &out).AppendString("1").message(),
            "expected a number for datatype FP32, got a string");
  EXPECT_EQ(JsonTensorAppender(DataType::kInt32, &out).AppendString("1").message(),
            "expected an integer for datatype INT32, got a string");
  EXPECT_EQ(JsonTensorAppender(DataType::kBool, &out).AppendInt(1).message(),
            "expected a boolean for datatype BOOL, got a number");
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
