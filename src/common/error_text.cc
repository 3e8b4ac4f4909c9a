#include "common/error_text.h"

namespace nereid {

std::string ClientText(std::string_view text) {
  if (text.size() <= kMaxErrorTextLength) return std::string(text);
  size_t cut = kMaxErrorTextLength;
  // Never split a multi-byte UTF-8 sequence: back off over continuation bytes (10xxxxxx).
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0u) == 0x80u) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace nereid
