#include "frontends/http/json_sax_events.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

namespace nereid {
namespace {

struct LastEvent {
  bool On(const JsonEvent& e) {
    kind = e.kind;
    i = e.i;
    u = e.u;
    d = e.d;
    return true;
  }
  JsonEv kind = JsonEv::kNull;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

LastEvent Convert(const std::string& text) {
  LastEvent sink;
  JsonEventAdapter<LastEvent> adapter(&sink);
  EXPECT_TRUE(adapter.RawNumber(text.data(), static_cast<rapidjson::SizeType>(text.size()), false))
      << text;
  return sink;
}

uint64_t Bits(double d) {
  uint64_t b;
  std::memcpy(&b, &d, sizeof(b));
  return b;
}

// Every double a client can write converts to exactly what strtod (correctly rounded) gives,
// whichever path (the exact fast case, from_chars, the out-of-range fallback) takes it.
TEST(JsonSaxEventsTest, DoublesMatchStrtodBitForBit) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> bits;
  const char* formats[] = {"%.1g", "%.6g", "%.9g", "%.15g", "%.17g", "%.3f", "%.12e", "%.20e"};
  char buf[512];
  for (int n = 0; n < 200000; ++n) {
    double v;
    uint64_t b = bits(rng);
    std::memcpy(&v, &b, sizeof(v));
    if (!std::isfinite(v)) continue;
    if (n % 2 == 0) v = std::ldexp(static_cast<double>(b % 2000000) - 1000000.0, -(n % 40));
    std::snprintf(buf, sizeof(buf), formats[n % 8], v);
    const std::string text(buf);
    const LastEvent e = Convert(text);
    const double want = std::strtod(buf, nullptr);
    if (e.kind == JsonEv::kDouble) {
      ASSERT_EQ(Bits(e.d), Bits(want)) << text;
    } else {  // written without fraction or exponent: an integer
      ASSERT_EQ(e.kind == JsonEv::kInt ? static_cast<double>(e.i) : static_cast<double>(e.u), want)
          << text;
    }
  }
}

TEST(JsonSaxEventsTest, IntegersAtEveryLengthAndLimit) {
  EXPECT_EQ(Convert("0").u, 0u);
  EXPECT_EQ(Convert("-0").kind, JsonEv::kUint);  // as rapidjson: -0 is the integer 0
  EXPECT_EQ(Convert("999999999999999999").u, 999999999999999999u);    // 18 digits
  EXPECT_EQ(Convert("-999999999999999999").i, -999999999999999999);   // 18 digits
  EXPECT_EQ(Convert("9223372036854775807").u, 9223372036854775807u);  // 19 digits
  EXPECT_EQ(Convert("-9223372036854775808").i, INT64_MIN);
  EXPECT_EQ(Convert("18446744073709551615").u, UINT64_MAX);  // 20 digits
  const LastEvent big = Convert("18446744073709551616");     // beyond 64 bits: a double
  EXPECT_EQ(big.kind, JsonEv::kDouble);
  EXPECT_EQ(big.d, 18446744073709551616.0);
  const LastEvent small = Convert("-9223372036854775809");
  EXPECT_EQ(small.kind, JsonEv::kDouble);
}

TEST(JsonSaxEventsTest, SpecialValuesAndExtremes) {
  EXPECT_TRUE(std::isnan(Convert("NaN").d));
  EXPECT_EQ(Convert("-Infinity").d, -INFINITY);
  EXPECT_EQ(Convert("Inf").d, INFINITY);
  EXPECT_EQ(Convert("1e400").d, INFINITY);
  EXPECT_EQ(Convert("-1e400").d, -INFINITY);
  EXPECT_EQ(Convert("1e-400").d, 0.0);
  EXPECT_EQ(Convert("0." + std::string(495, '0')).d, 0.0);
  EXPECT_EQ(Convert("1.5e-0022").d, 1.5e-22);  // exponent written with more than 3 digits
  EXPECT_EQ(Convert("123456789012345.6").d, 123456789012345.6);  // 16 digits: not the fast case
}

}  // namespace
}  // namespace nereid
