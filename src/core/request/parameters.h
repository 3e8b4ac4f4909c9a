// Request, tensor and response parameters: KServe v2's parameter map (InferParameter in gRPC).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace nereid {

using ParameterValue = std::variant<bool, int64_t, uint64_t, double, std::string>;

// A small ordered map; keeps insertion order so responses echo parameters as they came.
class Parameters {
 public:
  void Set(std::string key, ParameterValue value) {
    for (auto& [k, v] : entries_) {
      if (k == key) {
        v = std::move(value);
        return;
      }
    }
    entries_.emplace_back(std::move(key), std::move(value));
  }
  const ParameterValue* Find(std::string_view key) const {
    for (const auto& [k, v] : entries_) {
      if (k == key) return &v;
    }
    return nullptr;
  }
  bool Remove(std::string_view key) {
    for (auto it = entries_.begin(); it != entries_.end(); ++it) {
      if (it->first == key) {
        entries_.erase(it);
        return true;
      }
    }
    return false;
  }
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

 private:
  std::vector<std::pair<std::string, ParameterValue>> entries_;
};

// Typed reads; nullopt when absent or of another type (integers convert when they fit).
std::optional<bool> GetBool(const Parameters& p, std::string_view key);
std::optional<int64_t> GetInt(const Parameters& p, std::string_view key);
// Non-negative integers only (uint64, or int64 >= 0).
std::optional<uint64_t> GetUint(const Parameters& p, std::string_view key);

}  // namespace nereid
