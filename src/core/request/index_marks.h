// Marks positions 0..n-1 (e.g. "this model input was given"); n known up front. Up to 64
// positions live in one word, so the usual check allocates nothing. Not thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace nereid {

class IndexMarks {
 public:
  explicit IndexMarks(size_t n) {
    if (n > kInline) large_.assign(n, false);
  }

  // Precondition: i < n.
  bool IsSet(size_t i) const { return large_.empty() ? (bits_ >> i) & 1U : large_[i]; }
  void Set(size_t i) {
    if (large_.empty()) {
      bits_ |= uint64_t{1} << i;
    } else {
      large_[i] = true;
    }
  }

 private:
  static constexpr size_t kInline = 64;
  uint64_t bits_ = 0;
  std::vector<bool> large_;
};

}  // namespace nereid
