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
    if (n == 0) return false;
    const std::string_view text(s, n);
    if (text.find_first_of(".eEIN") == std::string_view::npos) {  // no fraction, exponent, NaN, Inf
      if (text[0] == '-') {
        if (auto v = ParseInteger<int64_t>(text)) return Int64(*v);
      } else if (auto v = ParseInteger<uint64_t>(text)) {
        return Uint64(*v);
      }
    }
    double d = 0;
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
  bool Text(JsonEv kind, const char* s, rapidjson::SizeType n) {
    JsonEvent e(kind);
    e.s = std::string_view(s, n);
    return sink_->On(e);
  }

  Sink* sink_;
};

}  // namespace nereid
