// RapidJSON writing straight into a std::string, with NaN/Infinity allowed (written as NaN,
// Infinity, -Infinity, as Triton's clients accept). Header-only; not thread-safe.
#pragma once

#include <rapidjson/writer.h>

#include <string>
#include <string_view>
#include <type_traits>
#include <variant>

#include "core/request/parameters.h"

namespace nereid {

// RapidJSON output stream appending to a caller-owned string.
class StringOutputStream {
 public:
  using Ch = char;
  explicit StringOutputStream(std::string* out) : out_(out) {}
  void Put(char c) { out_->push_back(c); }
  void Flush() {}
  std::string* target() const { return out_; }

 private:
  std::string* out_;
};

// True when RapidJSON would write `s` between its quotes unchanged: no control character, quote
// or backslash (UTF-8 to UTF-8 without validation, so every other byte is copied as it is).
inline bool IsPlainJsonString(std::string_view s) {
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == '"' || c == '\\') return false;
  }
  return true;
}

using JsonWriterBase = rapidjson::Writer<StringOutputStream, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                         rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>;

// RapidJSON's writer, except that a string or key with nothing to escape (IsPlainJsonString) is
// appended in one go instead of a byte at a time: names, data types and versions always are,
// and RapidJSON's byte loop was the largest user-space item of a JSON reply (bench/README.md,
// round 6). The output is byte for byte RapidJSON's.
class JsonWriter : public JsonWriterBase {
 public:
  using JsonWriterBase::JsonWriterBase;
  using JsonWriterBase::Key;
  using JsonWriterBase::String;

  bool String(const Ch* s, rapidjson::SizeType length, bool copy = false) {
    if (!IsPlainJsonString(std::string_view(s, length))) {
      return JsonWriterBase::String(s, length, copy);
    }
    Prefix(rapidjson::kStringType);
    std::string& out = *os_->target();
    out.push_back('"');
    out.append(s, length);
    out.push_back('"');
    return EndValue(true);
  }
  bool Key(const Ch* s, rapidjson::SizeType length, bool copy = false) {
    return String(s, length, copy);
  }
};

// This thread's writer, reset onto `stream`: a writer built per response allocates its allocator
// object and its nesting stack every time. Use it for one document at a time (it is reset by
// the next call on this thread, so never while another document is being written with it).
inline JsonWriter& ThreadJsonWriter(StringOutputStream& stream) {
  struct Reused {
    rapidjson::CrtAllocator allocator;
    StringOutputStream unused{nullptr};
    JsonWriter writer{unused, &allocator};
  };
  thread_local Reused reused;
  reused.writer.Reset(stream);
  return reused.writer;
}

inline void WriteJsonString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

inline void WriteJsonKey(JsonWriter& w, std::string_view s) {
  w.Key(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// A request or response parameter as its JSON value (bool, integer, number or string).
inline void WriteParameterValue(JsonWriter& w, const ParameterValue& value) {
  std::visit(
      [&w](const auto& v) {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          w.Bool(v);
        } else if constexpr (std::is_same_v<T, int64_t>) {
          w.Int64(v);
        } else if constexpr (std::is_same_v<T, uint64_t>) {
          w.Uint64(v);
        } else if constexpr (std::is_same_v<T, double>) {
          w.Double(v);
        } else {
          WriteJsonString(w, v);
        }
      },
      value);
}

}  // namespace nereid
