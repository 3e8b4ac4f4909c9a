// Strict parsing of integers written in configuration text (flags, backend settings, directory
// names): the whole text must be the number, so "12abc", " 12", "" and "+12" are refused instead
// of being read as a prefix (std::stoi's behaviour) or skipped silently.
//
// Thread-safety: pure functions.
#pragma once

#include <charconv>
#include <optional>
#include <string_view>
#include <type_traits>

namespace nereid {

// The integer `text` spells in decimal, or nothing when any character is not part of it or the
// value does not fit T.
template <typename T>
std::optional<T> ParseInteger(std::string_view text) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  T value{};
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace nereid
