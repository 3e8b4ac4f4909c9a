// Pieces of ValidateModelConfig, split by section. Internal to src/core/config.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "model_config.pb.h"
#include "nereid/status.h"

namespace nereid::config::internal {

// InvalidArgument "model '<name>': <message>".
inline Status ModelError(const inference::ModelConfig& config, std::string_view message) {
  return InvalidArgument("model '" + config.name() + "': " + std::string(message));
}

// "[1,-1,3]".
std::string DimsToString(std::span<const int64_t> dims);

// True for a path that stays inside the directory it is relative to: not absolute, no "..".
bool IsContainedRelativePath(std::string_view path);

// Inputs, outputs, batch_input and batch_output.
Status ValidateTensors(const inference::ModelConfig& config);

// dynamic_batching, sequence_batching and ensemble_scheduling (and the ensemble platform rules).
Status ValidateScheduling(const inference::ModelConfig& config);

// The ensemble platform rules and the data flow of ensemble_scheduling (validate_ensemble.cc).
Status ValidateEnsemble(const inference::ModelConfig& config);

}  // namespace nereid::config::internal
