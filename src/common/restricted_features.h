// Triton's restricted API categories (--http-restricted-api, --grpc-restricted-protocol;
// REFERENCE-2.md §12.3): a category may be bound to one header `<key>` that must carry `<value>`
// exactly, or the endpoint refuses the request (HTTP 403, gRPC UNAVAILABLE).
//
// Thread-safety: filled while the command line is parsed; read-only (and safe to share) after.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "nereid/status.h"

namespace nereid {

enum class RestrictedCategory {
  kHealth,
  kMetadata,
  kInference,
  kSharedMemory,
  kModelConfig,
  kModelRepository,
  kStatistics,
  kTrace,
  kLogging,
};
inline constexpr int kRestrictedCategoryCount = 9;

// The header (HTTP) or metadata key (gRPC, with its "triton-grpc-protocol-" prefix) and the
// value it must have.
struct Restriction {
  std::string key;
  std::string value;
};

class RestrictedFeatures {
 public:
  // "health", "metadata", "inference", "shared-memory", "model-config", "model-repository",
  // "statistics", "trace", "logging"; anything else (case matters, as in Triton) is nullopt.
  static std::optional<RestrictedCategory> ToCategory(std::string_view name);

  bool IsRestricted(RestrictedCategory category) const {
    return groups_[static_cast<int>(category)].has_value();
  }
  bool empty() const;
  // nullptr when `category` is not restricted.
  const Restriction* Get(RestrictedCategory category) const {
    const auto& r = groups_[static_cast<int>(category)];
    return r ? &*r : nullptr;
  }
  void Insert(RestrictedCategory category, Restriction restriction) {
    groups_[static_cast<int>(category)] = std::move(restriction);
  }

 private:
  std::array<std::optional<Restriction>, kRestrictedCategoryCount> groups_;
};

// The gRPC metadata key prefix Triton puts before the configured key.
inline constexpr char kRestrictedProtocolHeaderPrefix[] = "triton-grpc-protocol-";

// Adds one "<category>[,<category>...]:<key>=<value>" to `features` as Triton's
// ParseRestrictedFeatureOption does. `option_name` is the flag without dashes
// ("http-restricted-api"), `feature_type` is "api" or "protocol", `key_prefix` is put before
// <key>. Errors are INVALID_ARG with Triton's texts: the format error, "unknown restricted
// <type> 'X'" and "restricted <type> 'X' can not be specified in multiple config groups".
Status ParseRestrictedFeatureOption(std::string_view arg, std::string_view option_name,
                                    std::string_view key_prefix, std::string_view feature_type,
                                    RestrictedFeatures* features);

}  // namespace nereid
