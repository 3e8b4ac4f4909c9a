#include "core/config/version_policy.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <system_error>

#include "common/parse_number.h"

namespace nereid::config {
namespace {

namespace fs = std::filesystem;

void Warn(const LogFn& warn, const std::string& message) {
  if (warn) warn(message);
}

bool IsReservedSubdirectory(std::string_view name) {
  return name == "warmup" || name == "initial_state" || name == "configs";
}

std::vector<int64_t> SortedUnique(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

}  // namespace

std::optional<int64_t> ParseVersion(std::string_view name) {
  if (name.size() > 1 && name[0] == '0') return std::nullopt;               // "007"
  if (name.empty() || name[0] < '0' || name[0] > '9') return std::nullopt;  // "-1", "+1"
  return ParseInteger<int64_t>(name);
}

std::vector<int64_t> ListVersionDirectories(const fs::path& model_dir, const LogFn& warn) {
  std::vector<int64_t> versions;
  std::error_code ec;
  fs::directory_iterator it(model_dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    const std::string name = it->path().filename().string();
    if (IsReservedSubdirectory(name)) continue;
    std::optional<int64_t> version = ParseVersion(name);
    if (!version) {
      Warn(warn, "ignoring version directory '" + name + "' of model directory " +
                     model_dir.string() +
                     ": version directories must be non-negative integers without leading zeros");
      continue;
    }
    versions.push_back(*version);
  }
  if (ec) Warn(warn, "failed to list model directory " + model_dir.string() + ": " + ec.message());
  std::sort(versions.begin(), versions.end());
  return versions;
}

StatusOr<std::vector<int64_t>> SelectVersions(const inference::ModelVersionPolicy& policy,
                                              const std::vector<int64_t>& available,
                                              const std::string& model_name,
                                              std::vector<int64_t>* missing) {
  const std::vector<int64_t> versions = SortedUnique(available);
  std::vector<int64_t> selected;
  switch (policy.policy_choice_case()) {
    case inference::ModelVersionPolicy::kAll:
      selected = versions;
      break;
    case inference::ModelVersionPolicy::kSpecific:
      for (int64_t v : SortedUnique(
               {policy.specific().versions().begin(), policy.specific().versions().end()})) {
        if (std::binary_search(versions.begin(), versions.end(), v)) {
          selected.push_back(v);
        } else if (missing != nullptr) {
          missing->push_back(v);
        }
      }
      break;
    case inference::ModelVersionPolicy::kLatest:
    case inference::ModelVersionPolicy::POLICY_CHOICE_NOT_SET: {
      const size_t n =
          policy.has_latest() ? static_cast<size_t>(policy.latest().num_versions()) : 1;
      const size_t take = std::min(n, versions.size());
      selected.assign(versions.end() - static_cast<std::ptrdiff_t>(take), versions.end());
      break;
    }
  }
  if (selected.empty()) {
    return InvalidArgument(
        "at least one version must be available under the version policy of model '" + model_name +
        "'");
  }
  return selected;
}

}  // namespace nereid::config
