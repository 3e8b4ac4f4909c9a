// Model warmup (seed 003 "Model Warmup", REFERENCE.md §5.7): the `model_warmup` samples of a
// configuration turned into requests and run on every instance before the version is READY.
// Thread-safety: BuildWarmupSamples is a pure function; RunWarmup uses the instances it is given
// and must be the only user of them while it runs.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "nereid/backend_api.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

struct WarmupInput {
  std::string name;
  DataType data_type = DataType::kInvalid;
  Shape shape;  // with the batch dimension when the model batches
  std::shared_ptr<const std::string> data;
};

struct WarmupSample {
  std::string name;
  int count = 0;  // executions per instance (Triton: 0 means the sample is not used)
  std::vector<WarmupInput> inputs;
};

// Largest warmup input materialized in memory.
inline constexpr size_t kMaxWarmupInputBytes = 256 * 1024 * 1024;

// Builds the data of every sample: zeros, random values, or `<model_dir>/warmup/<file>` (which
// must hold exactly one batch item: its byte size, or for BYTES its element count, is checked and
// the content repeated for every item of the batch). Errors name the sample and the input.
StatusOr<std::vector<WarmupSample>> BuildWarmupSamples(const inference::ModelConfig& config,
                                                       const std::filesystem::path& model_dir);

// Runs every sample `count` times on every instance. The first failure is returned as
// "model '<m>': warmup sample '<s>' failed on instance <i>: <error>".
Status RunWarmup(const ModelInfo& model, const std::vector<WarmupSample>& samples,
                 const std::vector<std::unique_ptr<backend::ModelInstance>>& instances);

}  // namespace nereid
