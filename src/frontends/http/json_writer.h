// RapidJSON writing straight into a std::string, with NaN/Infinity allowed (written as NaN,
// Infinity, -Infinity, as Triton's clients accept). Header-only; not thread-safe.
#pragma once

#include <rapidjson/writer.h>

#include <string>
#include <string_view>

namespace nereid {

// RapidJSON output stream appending to a caller-owned string.
class StringOutputStream {
 public:
  using Ch = char;
  explicit StringOutputStream(std::string* out) : out_(out) {}
  void Put(char c) { out_->push_back(c); }
  void Flush() {}

 private:
  std::string* out_;
};

using JsonWriter = rapidjson::Writer<StringOutputStream, rapidjson::UTF8<>, rapidjson::UTF8<>,
                                     rapidjson::CrtAllocator, rapidjson::kWriteNanAndInfFlag>;

inline void WriteJsonString(JsonWriter& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

inline void WriteJsonKey(JsonWriter& w, std::string_view s) {
  w.Key(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

}  // namespace nereid
