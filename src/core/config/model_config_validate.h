// Validation of a normalized model configuration (run NormalizeModelConfig first). Checks the
// shape of the whole config, including the schedulers' sections, so a bad config.pbtxt fails at
// load time with a message naming the model, the field and the problem. Thread-safe pure
// function.
#pragma once

#include <string>

#include "model_config.pb.h"
#include "nereid/status.h"

namespace nereid::config {

// The platform served by the core's ensemble scheduler rather than by a backend.
inline constexpr char kEnsemblePlatform[] = "ensemble";

// Most instances one model may have, summed over its instance groups. Each instance is an executor
// thread and a loaded copy of the model, and a config given through the load API is client input:
// without a cap, `count: 1000000` would exhaust the process. 512 is one per hardware thread of the
// largest two-socket CPU servers.
inline constexpr int64_t kMaxInstancesPerModel = 512;

struct ValidateOptions {
  std::string model_dir_name;    // `name` must equal it unless name_may_differ or it is empty
  bool name_may_differ = false;  // true for configs given through the load API
};

// Returns the first problem found as InvalidArgument "model '<m>': <field>: <problem>" (a few
// messages keep Triton's exact wording). Covers: name, platform/backend, max_batch_size,
// version_policy, instance_group (at most kMaxInstancesPerModel instances), inputs/outputs (at
// most kMaxRequestInputs / kMaxRequestOutputs of them; names, data types, dims, reshape,
// label_filename), batch_input/batch_output, dynamic_batching, sequence_batching,
// ensemble_scheduling (shape only; the data-flow graph is the ensemble scheduler's to check),
// model_warmup, response_cache and model_metrics.
Status ValidateModelConfig(const inference::ModelConfig& config, const ValidateOptions& opts);

}  // namespace nereid::config
