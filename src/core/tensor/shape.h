// Shape arithmetic with overflow checks: element counts and byte sizes of tensors whose shapes
// come from untrusted requests.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid {

using Shape = std::vector<int64_t>;

// Product of dims, or nullopt when a dim is negative or the product overflows int64.
std::optional<int64_t> ElementCount(std::span<const int64_t> shape);

// Byte size of a fixed-size tensor, or an error naming `what` for negative dims, overflow, or
// BYTES (whose size depends on the data).
StatusOr<size_t> FixedByteSize(DataType type, std::span<const int64_t> shape,
                               const std::string& what);

// "[1,16]" — the form Triton uses in error messages. Shapes come from requests, so a long one is
// cut after about kMaxErrorTextLength characters: "[1,1,1,...] (100000 dims)".
std::string ShapeToString(std::span<const int64_t> shape);

// True when `shape` matches `pattern` (same rank; -1 in the pattern matches any dim >= 0).
bool ShapeMatches(std::span<const int64_t> shape, std::span<const int64_t> pattern);

}  // namespace nereid
