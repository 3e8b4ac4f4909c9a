#include "core/tensor/shape.h"

#include "common/error_text.h"

namespace nereid {

std::optional<int64_t> ElementCount(std::span<const int64_t> shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return std::nullopt;
    if (__builtin_mul_overflow(count, d, &count)) return std::nullopt;
  }
  return count;
}

StatusOr<size_t> FixedByteSize(DataType type, std::span<const int64_t> shape,
                               const std::string& what) {
  const size_t elem = DataTypeByteSize(type);
  if (elem == 0) return InvalidArgument(what + ": datatype has no fixed size");
  auto count = ElementCount(shape);
  if (!count) {
    return InvalidArgument(what + ": invalid shape " + ShapeToString(shape));
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(*count, static_cast<int64_t>(elem), &bytes)) {
    return InvalidArgument(what + ": shape " + ShapeToString(shape) + " is too large");
  }
  return static_cast<size_t>(bytes);
}

std::string ShapeToString(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ',';
    // Shapes come from requests: quote a bounded prefix, as ClientText does for names.
    if (s.size() > kMaxErrorTextLength) {
      return s + "...] (" + std::to_string(shape.size()) + " dims)";
    }
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

bool ShapeMatches(std::span<const int64_t> shape, std::span<const int64_t> pattern) {
  if (shape.size() != pattern.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (pattern[i] != -1 && pattern[i] != shape[i]) return false;
  }
  return true;
}

}  // namespace nereid
