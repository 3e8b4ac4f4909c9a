#include "core/cache/cache_factory.h"

#include <charconv>

#include "core/cache/local_cache.h"

namespace nereid {

StatusOr<std::unique_ptr<ResponseCache>> MakeLocalCache(
    const std::map<std::string, std::string>& settings) {
  const Status invalid = InvalidArgument(
      "Failed to initialize LocalCache: config didn't contain a valid 'size' field.");
  auto it = settings.find("size");
  if (it == settings.end()) return invalid;
  const std::string& text = it->second;
  uint64_t size = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), size);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || size == 0) {
    return invalid;
  }
  return std::unique_ptr<ResponseCache>(std::make_unique<LocalCache>(size));
}

}  // namespace nereid
