#include "frontends/http/base64.h"

namespace nereid {
namespace {

int Value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

}  // namespace

std::optional<std::string> Base64Decode(std::string_view in) {
  if (in.size() % 4 != 0) return std::nullopt;
  size_t padding = 0;
  if (!in.empty() && in.back() == '=')
    padding = (in.size() >= 2 && in[in.size() - 2] == '=') ? 2 : 1;
  std::string out;
  out.reserve(in.size() / 4 * 3);
  for (size_t i = 0; i < in.size(); i += 4) {
    const bool last = i + 4 == in.size();
    int v[4];
    for (int j = 0; j < 4; ++j) {
      const char c = in[i + j];
      if (c == '=' && last && j >= 4 - static_cast<int>(padding)) {
        v[j] = 0;
        continue;
      }
      v[j] = Value(c);
      if (v[j] < 0) return std::nullopt;
    }
    const uint32_t n =
        (uint32_t(v[0]) << 18) | (uint32_t(v[1]) << 12) | (uint32_t(v[2]) << 6) | uint32_t(v[3]);
    out.push_back(static_cast<char>(n >> 16));
    if (!last || padding < 2) out.push_back(static_cast<char>((n >> 8) & 0xff));
    if (!last || padding < 1) out.push_back(static_cast<char>(n & 0xff));
  }
  return out;
}

}  // namespace nereid
