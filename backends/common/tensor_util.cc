#include "common/tensor_util.h"

#include <limits>
#include <string>

namespace nereid::backends {

std::optional<size_t> ElementCount(std::span<const int64_t> shape) {
  size_t count = 1;
  for (int64_t dim : shape) {
    if (dim < 0) return std::nullopt;
    const auto d = static_cast<uint64_t>(dim);
    if (d != 0 && count > std::numeric_limits<size_t>::max() / d) return std::nullopt;
    count *= static_cast<size_t>(d);
  }
  return count;
}

Status SplitBytesElements(std::span<const char> data, size_t expected_count,
                          std::vector<std::string_view>* elements) {
  elements->clear();
  // Every element needs at least its prefix, so a larger count cannot fit; this also bounds the
  // reservation below by the data size.
  if (expected_count > data.size() / kBytesLengthPrefix) {
    return InvalidArgument("BYTES data of " + std::to_string(data.size()) + " bytes cannot hold " +
                           std::to_string(expected_count) + " elements");
  }
  elements->reserve(expected_count);
  size_t offset = 0;
  while (offset < data.size()) {
    if (data.size() - offset < kBytesLengthPrefix) {
      return InvalidArgument("BYTES element " + std::to_string(elements->size()) +
                             " has a truncated length prefix");
    }
    const auto* p = reinterpret_cast<const unsigned char*>(data.data() + offset);
    const size_t length = static_cast<size_t>(p[0]) | (static_cast<size_t>(p[1]) << 8) |
                          (static_cast<size_t>(p[2]) << 16) | (static_cast<size_t>(p[3]) << 24);
    offset += kBytesLengthPrefix;
    if (length > data.size() - offset) {
      return InvalidArgument("BYTES element " + std::to_string(elements->size()) + " of length " +
                             std::to_string(length) + " runs past the end of the data");
    }
    if (elements->size() == expected_count) {
      return InvalidArgument("BYTES data holds more than the expected " +
                             std::to_string(expected_count) + " elements");
    }
    elements->emplace_back(data.data() + offset, length);
    offset += length;
  }
  if (elements->size() != expected_count) {
    return InvalidArgument("BYTES data holds " + std::to_string(elements->size()) +
                           " elements, expected " + std::to_string(expected_count));
  }
  return Status::Ok();
}

}  // namespace nereid::backends
