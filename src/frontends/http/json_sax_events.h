// RapidJSON's SAX callbacks folded into one event type, so a parser is a single function of
// (state, event). Header-only; an adapter is used by one parse on one thread.
#pragma once

#include <rapidjson/reader.h>

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <system_error>

#include "common/parse_number.h"

namespace nereid {

enum class JsonEv : unsigned char {
  kNull,
  kBool,
  kInt,   // negative integer (i)
  kUint,  // non-negative integer (u)
  kDouble,
  kString,
  kKey,
  kStartObject,
  kEndObject,
  kStartArray,
  kEndArray
};

// One SAX event; `s` (strings and keys) is valid only during the callback.
struct JsonEvent {
  explicit JsonEvent(JsonEv k) : kind(k) {}
  JsonEv kind;
  bool b = false;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  std::string_view s;
};

// A RapidJSON handler forwarding every callback to `sink.On(const JsonEvent&)`, whose bool result
// continues (true) or aborts (false) the parse.
template <typename Sink>
class JsonEventAdapter {
 public:
  explicit JsonEventAdapter(Sink* sink) : sink_(sink) {}

  bool Null() { return sink_->On(JsonEvent(JsonEv::kNull)); }
  bool Bool(bool b) {
    JsonEvent e(JsonEv::kBool);
    e.b = b;
    return sink_->On(e);
  }
  bool Int(int i) { return Int64(i); }
  bool Uint(unsigned u) { return Uint64(u); }
  bool Int64(int64_t i) {
    if (i >= 0) return Uint64(static_cast<uint64_t>(i));
    JsonEvent e(JsonEv::kInt);
    e.i = i;
    return sink_->On(e);
  }
  bool Uint64(uint64_t u) {
    JsonEvent e(JsonEv::kUint);
    e.u = u;
    return sink_->On(e);
  }
  bool Double(double d) {
    JsonEvent e(JsonEv::kDouble);
    e.d = d;
    return sink_->On(e);
  }
  // kParseNumbersAsStringsFlag: `s` is a number rapidjson has checked against JSON's grammar (or
  // NaN / Inf / Infinity, optionally negative). Reported as rapidjson would report the parsed
  // value: integers that fit 64 bits as integers, everything else as a correctly rounded double
  // (out of range: +-infinity or zero, as strtod gives).
  bool RawNumber(const char* s, rapidjson::SizeType n, bool) {
    const char* end = s + n;
    const bool minus = n > 0 && *s == '-';
    const char* digits = s + (minus ? 1 : 0);
    // Integers, the common case, in one pass: 18 digits stay below 2^63, so either sign fits.
    const char* q = digits;
    uint64_t v = 0;
    for (; q != end && q - digits < 18 && static_cast<unsigned>(*q - '0') < 10; ++q) {
      v = v * 10 + static_cast<unsigned>(*q - '0');
    }
    if (q == end && q != digits) {
      if (!minus) return Uint64(v);
      return Int64(-static_cast<int64_t>(v));  // v < 10^18: no overflow
    }
    if (q - digits == 18 && std::string_view(s, n).find_first_of(".eE") == std::string_view::npos) {
      // 19 or more digits: an integer only if it fits 64 bits, else a double as rapidjson does.
      if (minus) {
        if (auto i = ParseInteger<int64_t>(std::string_view(s, n))) return Int64(*i);
      } else if (auto u = ParseInteger<uint64_t>(std::string_view(s, n))) {
        return Uint64(*u);
      }
    }
    double d = 0;
    if (FastDouble(digits, end, &d)) return Double(minus ? -d : d);
    auto [p, ec] = std::from_chars(s, end, d);
    if (ec == std::errc::result_out_of_range) {
      d = std::strtod(std::string(s, n).c_str(), nullptr);  // +-HUGE_VAL or the underflow value
    } else if (ec != std::errc() || p != end) {
      return false;
    }
    return Double(d);
  }
  bool String(const char* s, rapidjson::SizeType n, bool) { return Text(JsonEv::kString, s, n); }
  bool Key(const char* s, rapidjson::SizeType n, bool) { return Text(JsonEv::kKey, s, n); }
  bool StartObject() { return sink_->On(JsonEvent(JsonEv::kStartObject)); }
  bool EndObject(rapidjson::SizeType) { return sink_->On(JsonEvent(JsonEv::kEndObject)); }
  bool StartArray() { return sink_->On(JsonEvent(JsonEv::kStartArray)); }
  bool EndArray(rapidjson::SizeType) { return sink_->On(JsonEvent(JsonEv::kEndArray)); }

 private:
  // Clinger's exact case, as rapidjson's StrtodFast: at most 15 significant digits (the mantissa
  // is then exact in a double) and a decimal exponent within +-22 (10^k is exact): one correctly
  // rounded multiplication or division. `p` is past any sign, and JSON's grammar was checked.
  static bool FastDouble(const char* p, const char* end, double* out) {
    static constexpr double kPow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                        1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                        1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    uint64_t mantissa = 0;
    int significant = 0;
    int exponent = 0;
    bool fraction = false;
    for (; p != end && *p != 'e' && *p != 'E'; ++p) {
      if (*p == '.') {
        fraction = true;
        continue;
      }
      const unsigned digit = static_cast<unsigned>(*p - '0');
      if (digit > 9) return false;  // NaN, Infinity
      if (mantissa != 0 || digit != 0) ++significant;
      if (significant > 15) return false;
      mantissa = mantissa * 10 + digit;
      if (fraction) --exponent;
    }
    if (p != end) {  // exponent: [eE][+-]?digits, at most 3 digits considered
      ++p;
      const bool negative = p != end && *p == '-';
      if (p != end && (*p == '-' || *p == '+')) ++p;
      int e = 0;
      for (int k = 0; p != end; ++p, ++k) {
        if (k == 3) return false;
        e = e * 10 + (*p - '0');
      }
      exponent += negative ? -e : e;
    }
    if (exponent < -22 || exponent > 22) return false;
    const double m = static_cast<double>(mantissa);
    *out = exponent < 0 ? m / kPow10[-exponent] : m * kPow10[exponent];
    return true;
  }

  bool Text(JsonEv kind, const char* s, rapidjson::SizeType n) {
    JsonEvent e(kind);
    e.s = std::string_view(s, n);
    return sink_->On(e);
  }

  Sink* sink_;
};

}  // namespace nereid
