#include "common/restricted_features.h"

#include <algorithm>
#include <utility>

namespace nereid {
namespace {

constexpr std::pair<std::string_view, RestrictedCategory> kNames[] = {
    {"health", RestrictedCategory::kHealth},
    {"metadata", RestrictedCategory::kMetadata},
    {"inference", RestrictedCategory::kInference},
    {"shared-memory", RestrictedCategory::kSharedMemory},
    {"model-config", RestrictedCategory::kModelConfig},
    {"model-repository", RestrictedCategory::kModelRepository},
    {"statistics", RestrictedCategory::kStatistics},
    {"trace", RestrictedCategory::kTrace},
    {"logging", RestrictedCategory::kLogging},
};

}  // namespace

std::optional<RestrictedCategory> RestrictedFeatures::ToCategory(std::string_view name) {
  for (const auto& [n, category] : kNames) {
    if (n == name) return category;
  }
  return std::nullopt;
}

bool RestrictedFeatures::empty() const {
  return std::none_of(groups_.begin(), groups_.end(), [](const auto& g) { return g.has_value(); });
}

Status ParseRestrictedFeatureOption(std::string_view arg, std::string_view option_name,
                                    std::string_view key_prefix, std::string_view feature_type,
                                    RestrictedFeatures* features) {
  // "<config name>:<setting>=<value>", each part non-empty; the '=' is searched after the ':'.
  const std::string format_error = "--" + std::string(option_name) +
                                   " option format is '<config name>:<setting>=<value>'. Got " +
                                   std::string(arg);
  const size_t colon = arg.find(':');
  if (colon == std::string_view::npos) return InvalidArgument(format_error);
  const size_t eq = arg.find('=', colon + 1);
  if (eq == std::string_view::npos) return InvalidArgument(format_error);
  const std::string_view names = arg.substr(0, colon);
  const std::string_view key = arg.substr(colon + 1, eq - colon - 1);
  const std::string_view value = arg.substr(eq + 1);
  if (names.empty() || key.empty() || value.empty()) return InvalidArgument(format_error);

  // Split on ',' keeping empty pieces, which are unknown categories as in Triton.
  size_t start = 0;
  while (true) {
    const size_t comma = names.find(',', start);
    const std::string_view name = names.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    const auto category = RestrictedFeatures::ToCategory(name);
    if (!category) {
      return InvalidArgument("unknown restricted " + std::string(feature_type) + " '" +
                             std::string(name) + "'");
    }
    if (features->IsRestricted(*category)) {
      return InvalidArgument("restricted " + std::string(feature_type) + " '" + std::string(name) +
                             "' can not be specified in multiple config groups");
    }
    features->Insert(*category,
                     Restriction{std::string(key_prefix) + std::string(key), std::string(value)});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return Status::Ok();
}

}  // namespace nereid
