// Strict standard base64 (RFC 4648 §4, with '=' padding) decoding for the load API's `file:`
// parameters. Thread-safe pure function.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace nereid {

// The decoded bytes, or nullopt when `in` is not canonical base64: a length that is not a
// multiple of 4, a character outside the alphabet, or padding anywhere but the end. The output
// size is computed from the input length before anything is allocated.
std::optional<std::string> Base64Decode(std::string_view in);

}  // namespace nereid
