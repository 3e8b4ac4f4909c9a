// Bounds client-supplied text (tensor names, request ids, header values, parameter keys) that an
// error message quotes, so a hostile request cannot make the server echo or log megabytes of its
// own input. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace nereid {

// The most bytes of one client-supplied value an error message quotes.
inline constexpr size_t kMaxErrorTextLength = 128;

// `text` unchanged when it is at most kMaxErrorTextLength bytes; otherwise its first bytes, cut on
// a UTF-8 character boundary, followed by "... (<n> bytes)" where n is the full length.
std::string ClientText(std::string_view text);

}  // namespace nereid
