// Finds repeated tensor names while a request is built one tensor at a time, in O(1) per name:
// a scan while there are few names (held inline: short names allocate nothing), a hash set
// beyond. Not thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>

namespace nereid {

class NameSet {
 public:
  // Adds `name`; false when it was added before.
  bool Insert(std::string_view name) {
    if (large_.empty()) {
      for (size_t i = 0; i < small_count_; ++i) {
        if (small_[i] == name) return false;
      }
      if (small_count_ < kScanLimit) {
        small_[small_count_++].assign(name);
        return true;
      }
      large_.reserve(kScanLimit * 4);
      for (std::string& n : small_) large_.insert(std::move(n));
      small_count_ = 0;
    }
    return large_.emplace(name).second;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr size_t kScanLimit = 8;

  std::array<std::string, kScanLimit> small_;
  size_t small_count_ = 0;
  std::unordered_set<std::string, Hash, std::equal_to<>> large_;
};

}  // namespace nereid
