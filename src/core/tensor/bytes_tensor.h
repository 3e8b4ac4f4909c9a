// BYTES tensors in their serialized form: each element is a 4-byte little-endian length followed
// by that many bytes, elements back to back (the binary tensor data format and the in-memory
// form everywhere in Nereid).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nereid/status.h"

namespace nereid {

// Counts the elements of serialized BYTES data, checking every length stays inside `data`.
StatusOr<int64_t> CountBytesElements(std::span<const char> data);

// Calls fn(std::string_view element) for each element; stops at the first malformed length.
template <typename Fn>
Status ForEachBytesElement(std::span<const char> data, Fn&& fn) {
  size_t pos = 0;
  while (pos < data.size()) {
    if (data.size() - pos < 4) {
      return InvalidArgument("BYTES data ends inside an element's 4-byte length prefix");
    }
    const auto* p = reinterpret_cast<const unsigned char*>(data.data() + pos);
    const uint32_t len = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 |
                         uint32_t(p[3]) << 24;
    pos += 4;
    if (len > data.size() - pos) {
      return InvalidArgument("BYTES element length " + std::to_string(len) +
                             " runs past the end of the tensor data");
    }
    fn(std::string_view(data.data() + pos, len));
    pos += len;
  }
  return Status::Ok();
}

// Appends one element (length prefix + bytes) to `out`.
void AppendBytesElement(std::string_view element, std::string* out);

}  // namespace nereid
