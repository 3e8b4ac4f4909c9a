#include "core/tensor/bytes_tensor.h"

namespace nereid {

StatusOr<int64_t> CountBytesElements(std::span<const char> data) {
  int64_t n = 0;
  Status s = ForEachBytesElement(data, [&n](std::string_view) { ++n; });
  if (!s.ok()) return s;
  return n;
}

void AppendBytesElement(std::string_view element, std::string* out) {
  const auto len = static_cast<uint32_t>(element.size());
  const char prefix[4] = {static_cast<char>(len & 0xff), static_cast<char>((len >> 8) & 0xff),
                          static_cast<char>((len >> 16) & 0xff),
                          static_cast<char>((len >> 24) & 0xff)};
  out->append(prefix, 4);
  out->append(element);
}

}  // namespace nereid
