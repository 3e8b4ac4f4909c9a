// Model versions: which numeric subdirectories exist and which of them a version policy selects.
// Thread-safe free functions.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model_config.pb.h"
#include "nereid/status.h"

namespace nereid::config {

// Receives one warning line; may be empty (warnings dropped). Called on the caller's thread.
using LogFn = std::function<void(const std::string& message)>;

// The version a subdirectory name stands for: decimal digits only, no leading zero (except "0"),
// fits in int64. Anything else ("v1", "-1", "007", "+1") is not a version.
std::optional<int64_t> ParseVersion(std::string_view name);

// Version numbers of `model_dir`'s subdirectories (symlinks to directories count), ascending.
// `warmup`, `initial_state` and `configs` are skipped silently, files are skipped silently, and
// every other name that is not a version ("v1", "-1", "007", a number beyond int64) is skipped
// with a warning through `warn`. "0" is version 0. An unreadable `model_dir` yields the versions
// read so far and a warning.
std::vector<int64_t> ListVersionDirectories(const std::filesystem::path& model_dir,
                                            const LogFn& warn);

// The versions of `available` that `policy` selects, ascending:
//   latest { num_versions: n } -> the n highest; all -> all;
//   specific { versions } -> the listed versions that are available; listed versions that are
//   not available are appended (ascending, once each) to `*missing` when it is non-null, even when
//   an error is returned, so the caller can log them.
// A policy with no choice set means latest 1. When nothing qualifies: InvalidArgument "at least
// one version must be available under the version policy of model '<model_name>'".
StatusOr<std::vector<int64_t>> SelectVersions(const inference::ModelVersionPolicy& policy,
                                              const std::vector<int64_t>& available,
                                              const std::string& model_name,
                                              std::vector<int64_t>* missing = nullptr);

}  // namespace nereid::config
