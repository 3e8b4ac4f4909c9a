// Little-endian helpers for the binary frame headers between the server and its Python stubs
// (stub_protocol.h, bls_frames.h). Pure, header-only.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace nereid::backends::python {

inline void PutLe(char* out, uint64_t value, int bytes) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, &value, static_cast<size_t>(bytes));
    return;
  }
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

inline uint64_t GetLe(const char* in, int bytes) {
  uint64_t v = 0;
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(&v, in, static_cast<size_t>(bytes));  // one load, not a loop per byte
    return v;
  }
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  }
  return v;
}

// Appends `value`'s low `bytes` bytes, little-endian.
inline void AppendLe(std::string* out, uint64_t value, int bytes) {
  char b[8];
  PutLe(b, value, bytes);
  out->append(b, static_cast<size_t>(bytes));
}

// Reads a binary header front to back; every read past its end fails (and reads nothing).
class BinaryReader {
 public:
  explicit BinaryReader(std::string_view bytes) : bytes_(bytes) {}
  bool Le(int n, uint64_t* v) {
    if (bytes_.size() - pos_ < static_cast<size_t>(n)) return false;
    *v = GetLe(bytes_.data() + pos_, n);
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool Bytes(uint64_t n, std::string* out) {
    if (bytes_.size() - pos_ < n) return false;
    out->assign(bytes_.data() + pos_, static_cast<size_t>(n));
    pos_ += static_cast<size_t>(n);
    return true;
  }
  bool AtEnd() const { return pos_ == bytes_.size(); }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

}  // namespace nereid::backends::python
