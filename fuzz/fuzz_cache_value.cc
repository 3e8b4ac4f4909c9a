// The Redis response cache's untrusted input: the bytes Redis answers for a key
// (DecodeCacheValue, core/cache/cache_value.h). Anything Redis holds may be garbage, truncated or
// from another writer; decoding must reject it without crashing or allocating more than the input
// justifies. A value that decodes is re-encoded and must give back the same bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "core/cache/cache_value.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const char> bytes(reinterpret_cast<const char*>(data), size);
  auto value = nereid::DecodeCacheValue(bytes);
  if (!value.ok()) return 0;
  std::vector<std::span<const char>> outs;
  for (const auto& o : value->outputs) outs.emplace_back(o.data.data(), o.data.size());
  const std::string again = nereid::EncodeCacheValue(value->key, value->outputs, outs);
  if (again != std::string(bytes.data(), bytes.size())) std::abort();
  return 0;
}
