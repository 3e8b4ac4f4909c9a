// Reading config.pbtxt: protobuf text format into inference::ModelConfig. Pure functions of their
// arguments and the file system; thread-safe.
#pragma once

#include <cstddef>
#include <filesystem>
#include <optional>
#include <string_view>

#include "model_config.pb.h"
#include "nereid/status.h"

namespace nereid::config {

// Larger configuration files are rejected before they are read.
inline constexpr size_t kMaxModelConfigBytes = 16 * 1024 * 1024;

// Parses protobuf text format. Syntax errors, unknown fields and unknown enum names are
// InvalidArgument naming `source_path` and the 1-based line and column, e.g.
// "failed to parse /repo/m/config.pbtxt: line 3, column 5: Expected ...".
StatusOr<inference::ModelConfig> ParseModelConfigText(std::string_view text,
                                                      std::string_view source_path);

// Reads `model_dir/configs/<config_name>.pbtxt` when `config_name` is non-empty and that file
// exists, else `model_dir/config.pbtxt` (Triton's --model-config-name). Returns nullopt when the
// chosen file does not exist (the caller may auto-complete). A `config_name` that is not a plain
// file name, a file that is not a regular file or is larger than kMaxModelConfigBytes, I/O errors
// and parse errors are errors.
StatusOr<std::optional<inference::ModelConfig>> ReadModelConfig(
    const std::filesystem::path& model_dir, std::string_view config_name);

}  // namespace nereid::config
