#include "core/request/parameters.h"

#include <limits>

namespace nereid {

std::optional<bool> GetBool(const Parameters& p, std::string_view key) {
  const ParameterValue* v = p.Find(key);
  if (v == nullptr) return std::nullopt;
  if (const bool* b = std::get_if<bool>(v)) return *b;
  return std::nullopt;
}

std::optional<int64_t> GetInt(const Parameters& p, std::string_view key) {
  const ParameterValue* v = p.Find(key);
  if (v == nullptr) return std::nullopt;
  if (const int64_t* i = std::get_if<int64_t>(v)) return *i;
  if (const uint64_t* u = std::get_if<uint64_t>(v)) {
    if (*u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(*u);
    }
  }
  return std::nullopt;
}

std::optional<uint64_t> GetUint(const Parameters& p, std::string_view key) {
  const ParameterValue* v = p.Find(key);
  if (v == nullptr) return std::nullopt;
  if (const uint64_t* u = std::get_if<uint64_t>(v)) return *u;
  if (const int64_t* i = std::get_if<int64_t>(v)) {
    if (*i >= 0) return static_cast<uint64_t>(*i);
  }
  return std::nullopt;
}

}  // namespace nereid
