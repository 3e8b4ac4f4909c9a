// Request, tensor and response parameters: KServe v2's parameter map (InferParameter in gRPC).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "nereid/status.h"

namespace nereid {

using ParameterValue = std::variant<bool, int64_t, uint64_t, double, std::string>;

// An insertion-ordered map (responses echo parameters as they came). Small maps are scanned;
// past kIndexThreshold entries a hash index keeps Set and Find O(1), so building a map of n
// parameters from a request is O(n), never O(n^2). Remove is O(n); it serves the few parameters a
// frontend consumes. Copyable; not thread-safe.
class Parameters {
 public:
  void Set(std::string key, ParameterValue value);
  const ParameterValue* Find(std::string_view key) const;
  bool Remove(std::string_view key);
  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  auto begin() const { return entries_.begin(); }
  auto end() const { return entries_.end(); }

  static constexpr size_t kIndexThreshold = 8;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static constexpr size_t kNotFound = static_cast<size_t>(-1);

  size_t IndexOf(std::string_view key) const;
  void Reindex();

  std::vector<std::pair<std::string, ParameterValue>> entries_;
  // key -> position in entries_; empty while entries_ has at most kIndexThreshold entries.
  std::unordered_map<std::string, size_t, Hash, std::equal_to<>> index_;
};

// Typed reads; nullopt when absent or of another type (integers convert when they fit).
std::optional<bool> GetBool(const Parameters& p, std::string_view key);
std::optional<int64_t> GetInt(const Parameters& p, std::string_view key);
// Non-negative integers only (uint64, or int64 >= 0).
std::optional<uint64_t> GetUint(const Parameters& p, std::string_view key);

// The error for a `sequence_id` that is neither a string nor a non-negative integer. HTTP and gRPC
// both give it (the text is Triton's HTTP one; Triton's gRPC frontend wraps a negative int64).
Status InvalidSequenceId();

}  // namespace nereid
