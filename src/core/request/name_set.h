// Finds repeated tensor names while a request is built one tensor at a time, in O(1) per name:
// a scan while there are few names, a hash set beyond. Not thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace nereid {

class NameSet {
 public:
  // Adds `name`; false when it was added before.
  bool Insert(std::string_view name) {
    if (large_.empty()) {
      for (const std::string& n : small_) {
        if (n == name) return false;
      }
      small_.emplace_back(name);
      if (small_.size() > kScanLimit) {
        large_.reserve(small_.size() * 2);
        for (std::string& n : small_) large_.insert(std::move(n));
        small_.clear();
      }
      return true;
    }
    return large_.emplace(name).second;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr size_t kScanLimit = 8;

  std::vector<std::string> small_;
  std::unordered_set<std::string, Hash, std::equal_to<>> large_;
};

}  // namespace nereid
