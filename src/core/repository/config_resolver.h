// Turns a model directory into its effective configuration: reads config.pbtxt (or the
// --model-config-name variant), finds the backend that serves it, lets that backend auto-complete
// what is missing, fills Triton's defaults, validates, and renders the JSON once.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/model/backend_registry.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

struct ResolveOptions {
  std::string model_config_name;
  bool auto_complete = true;
  int default_max_batch_size = 4;
};

struct ResolvedModel {
  std::shared_ptr<const inference::ModelConfig> config;
  std::shared_ptr<const std::string> config_json;
  const BackendRegistry::Entry* backend = nullptr;  // nullptr for an ensemble
  std::vector<int64_t> versions;                    // selected by the version policy, ascending
};

// With `override_config` (the load API's `config` parameter) that configuration replaces the
// config.pbtxt; its `name` may differ and is replaced with `name`.
StatusOr<ResolvedModel> ResolveModel(const std::string& name, const std::filesystem::path& dir,
                                     const BackendRegistry& registry, const ResolveOptions& options,
                                     const inference::ModelConfig* override_config = nullptr);

}  // namespace nereid
