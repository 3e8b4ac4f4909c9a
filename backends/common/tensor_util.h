// Tensor helpers shared by the backend plugins: overflow-safe element counts and the BYTES
// element encoding (each element is a 4-byte little-endian length followed by that many bytes,
// elements concatenated). Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "nereid/status.h"

namespace nereid::backends {

inline constexpr size_t kBytesLengthPrefix = 4;

// Product of `shape`; nullopt when a dimension is negative or the product overflows size_t.
std::optional<size_t> ElementCount(std::span<const int64_t> shape);

// Splits BYTES tensor data into exactly `expected_count` element views (pointing into `data`).
// InvalidArgument when a length prefix is truncated, an element runs past the end, the data holds
// fewer or more elements than expected, or bytes are left over. `elements` is cleared first, so a
// caller may reuse it across calls to avoid allocations.
Status SplitBytesElements(std::span<const char> data, size_t expected_count,
                          std::vector<std::string_view>* elements);

// Writes `length` as the 4-byte little-endian prefix at `dst`. Precondition: length <= UINT32_MAX.
inline void WriteBytesLength(uint32_t length, char* dst) {
  const unsigned char bytes[kBytesLengthPrefix] = {
      static_cast<unsigned char>(length), static_cast<unsigned char>(length >> 8),
      static_cast<unsigned char>(length >> 16), static_cast<unsigned char>(length >> 24)};
  std::memcpy(dst, bytes, kBytesLengthPrefix);
}

}  // namespace nereid::backends
