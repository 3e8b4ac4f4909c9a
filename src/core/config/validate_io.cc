#include <filesystem>
#include <set>
#include <vector>

#include "core/config/validate_internal.h"
#include "core/request/request_limits.h"

namespace nereid::config::internal {
namespace {

constexpr int64_t kWildcardDim = -1;

bool ValidDims(std::span<const int64_t> dims) {
  for (int64_t d : dims) {
    if (d < 1 && d != kWildcardDim) return false;
  }
  return true;
}

// Products of the fixed dims between wildcards: [2,4,-1,6] -> {8, 6}; [] -> {1}. Empty when a
// product overflows.
std::vector<int64_t> FixedRuns(std::span<const int64_t> dims) {
  std::vector<int64_t> runs;
  int64_t current = 1;
  for (int64_t d : dims) {
    if (d == kWildcardDim) {
      runs.push_back(current);
      current = 1;
    } else if (__builtin_mul_overflow(current, d, &current)) {
      return {};
    }
  }
  runs.push_back(current);
  return runs;
}

// Triton's rule (ValidateIOShape): dims and reshape must have the same number of variable-size
// dims and every run of fixed dims between them the same element count, so [2,4,-1,6] may
// become [8,-1,1,6]. An empty reshape stands for one element (a batch-only tensor).
template <class Tensor>
Status ValidateReshape(const inference::ModelConfig& config, const Tensor& io,
                       const std::string& what) {
  std::span<const int64_t> dims(io.dims().data(), io.dims().size());
  std::span<const int64_t> shape(io.reshape().shape().data(), io.reshape().shape().size());
  if (shape.empty() && config.max_batch_size() == 0) {
    return ModelError(config, what +
                                  ": empty 'reshape' is not allowed when max_batch_size is 0 as "
                                  "scalar tensors are not supported");
  }
  if (!ValidDims(shape)) {
    return ModelError(config, what +
                                  ": 'reshape.shape' must be integers >= 1, or -1 for a "
                                  "variable-size dimension, got " +
                                  DimsToString(shape));
  }
  std::vector<int64_t> dims_runs = FixedRuns(dims);
  std::vector<int64_t> shape_runs = FixedRuns(shape);
  if (dims_runs.empty() || shape_runs.empty()) {
    return ModelError(config, what + ": element count of 'dims' or 'reshape.shape' overflows");
  }
  if (dims_runs.size() != shape_runs.size()) {
    return ModelError(config, what +
                                  ": 'dims' and 'reshape.shape' have different numbers of "
                                  "variable-size dimensions (" +
                                  DimsToString(dims) + " vs " + DimsToString(shape) + ")");
  }
  if (dims_runs != shape_runs) {
    return ModelError(config, what + ": 'dims' " + DimsToString(dims) + " and 'reshape.shape' " +
                                  DimsToString(shape) + " have different element counts");
  }
  return Status::Ok();
}

template <class Tensor>
Status ValidateTensor(const inference::ModelConfig& config, const Tensor& io, const char* kind,
                      int index) {
  if (io.name().empty()) {
    return ModelError(config,
                      std::string(kind) + " " + std::to_string(index) + ": must specify 'name'");
  }
  const std::string what = std::string(kind) + " '" + io.name() + "'";
  if (io.data_type() == inference::TYPE_INVALID) {
    return ModelError(config, what + ": must specify 'data_type'");
  }
  if (!inference::DataType_IsValid(io.data_type())) {
    return ModelError(config, what + ": unknown 'data_type' " + std::to_string(io.data_type()));
  }
  if (io.dims().empty()) {
    return ModelError(config, what + ": must specify 'dims' (rank >= 1)");
  }
  std::span<const int64_t> dims(io.dims().data(), io.dims().size());
  if (!ValidDims(dims)) {
    return ModelError(config, what +
                                  ": 'dims' must be integers >= 1, or -1 for a variable-size "
                                  "dimension, got " +
                                  DimsToString(dims));
  }
  if (io.has_reshape()) NEREID_RETURN_IF_ERROR(ValidateReshape(config, io, what));
  return Status::Ok();
}

Status ValidateInputFormat(const inference::ModelConfig& config, const inference::ModelInput& in) {
  if (!inference::ModelInput::Format_IsValid(in.format())) {
    return ModelError(config,
                      "input '" + in.name() + "': unknown 'format' " + std::to_string(in.format()));
  }
  if ((in.format() == inference::ModelInput::FORMAT_NHWC ||
       in.format() == inference::ModelInput::FORMAT_NCHW) &&
      in.dims_size() != 3) {
    return ModelError(config, "input '" + in.name() + "': 'format' " +
                                  inference::ModelInput::Format_Name(in.format()) +
                                  " requires 3 dims");
  }
  return Status::Ok();
}

// Triton's ValidateBatchIO (texts included), plus what a backend would otherwise trip over:
// a batch input needs a target name, and its target names are new model inputs (not configured
// inputs, not another batch input's).
Status ValidateBatchInputs(const inference::ModelConfig& config,
                           const std::set<std::string>& inputs) {
  std::set<std::string> targets;
  for (const auto& bi : config.batch_input()) {
    if (!inference::BatchInput::Kind_IsValid(bi.kind())) {
      return ModelError(config, "unknown batch input kind '" + std::to_string(bi.kind()) + "'");
    }
    const std::string kind = inference::BatchInput::Kind_Name(bi.kind());
    if (bi.source_input_size() != 1) {
      return ModelError(config, "batch input kind '" + kind + "' expects 1 source input, got " +
                                    std::to_string(bi.source_input_size()));
    }
    if (bi.data_type() != inference::TYPE_INT32 && bi.data_type() != inference::TYPE_FP32) {
      return ModelError(config, "batch input data type must be TYPE_INT32 or TYPE_FP32");
    }
    if (!inputs.contains(bi.source_input(0))) {
      return ModelError(config, "unknown source input name '" + bi.source_input(0) + "'");
    }
    if (bi.target_name_size() == 0) {
      return ModelError(config, "batch input kind '" + kind + "' must specify a 'target_name'");
    }
    for (const std::string& target : bi.target_name()) {
      if (target.empty()) {
        return ModelError(config, "batch input kind '" + kind + "' has an empty 'target_name'");
      }
      if (inputs.contains(target)) {
        return ModelError(config, "batch input target name '" + target +
                                      "' is also the name of a configured input");
      }
      if (!targets.insert(target).second) {
        return ModelError(config,
                          "batch input target name '" + target + "' can only be specified once");
      }
    }
  }
  return Status::Ok();
}

Status ValidateBatchOutputs(const inference::ModelConfig& config,
                            const std::set<std::string>& inputs,
                            const std::set<std::string>& outputs) {
  std::set<std::string> all_targets;
  for (const auto& bo : config.batch_output()) {
    if (!inference::BatchOutput::Kind_IsValid(bo.kind())) {
      return ModelError(config, "unknown batch output kind '" + std::to_string(bo.kind()) + "'");
    }
    if (bo.source_input_size() != 1) {
      return ModelError(
          config, "batch output kind '" + inference::BatchOutput::Kind_Name(bo.kind()) +
                      "' expects 1 source input, got " + std::to_string(bo.source_input_size()));
    }
    if (!inputs.contains(bo.source_input(0))) {
      return ModelError(config, "unknown source input name '" + bo.source_input(0) + "'");
    }
    std::set<std::string> targets;
    for (const std::string& target : bo.target_name()) {
      if (!outputs.contains(target)) {
        return ModelError(config, "unknown target output name '" + target + "'");
      }
      if (!targets.insert(target).second) {
        return ModelError(config, "target output name '" + target + "' can only be specified once");
      }
      // Nereid: one output scattered two ways has no meaning.
      if (!all_targets.insert(target).second) {
        return ModelError(config, "target output name '" + target +
                                      "' is the target of more than one batch output");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

std::string DimsToString(std::span<const int64_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

bool IsContainedRelativePath(std::string_view path) {
  std::filesystem::path p(path);
  if (p.is_absolute()) return false;
  for (const auto& part : p) {
    if (part == "..") return false;
  }
  return true;
}

Status ValidateTensors(const inference::ModelConfig& config) {
  // A request can name at most this many tensors, so a model needing more could never be served.
  if (static_cast<size_t>(config.input_size()) > kMaxRequestInputs) {
    return ModelError(config, "has " + std::to_string(config.input_size()) + " inputs; at most " +
                                  std::to_string(kMaxRequestInputs) + " are supported");
  }
  if (static_cast<size_t>(config.output_size()) > kMaxRequestOutputs) {
    return ModelError(config, "has " + std::to_string(config.output_size()) + " outputs; at most " +
                                  std::to_string(kMaxRequestOutputs) + " are supported");
  }
  std::set<std::string> inputs;
  for (int i = 0; i < config.input_size(); ++i) {
    const auto& in = config.input(i);
    NEREID_RETURN_IF_ERROR(ValidateTensor(config, in, "input", i));
    NEREID_RETURN_IF_ERROR(ValidateInputFormat(config, in));
    if (!inputs.insert(in.name()).second) {
      return ModelError(config, "input '" + in.name() + "' is specified more than once");
    }
  }
  std::set<std::string> outputs;
  for (int i = 0; i < config.output_size(); ++i) {
    const auto& out = config.output(i);
    NEREID_RETURN_IF_ERROR(ValidateTensor(config, out, "output", i));
    if (!outputs.insert(out.name()).second) {
      return ModelError(config, "output '" + out.name() + "' is specified more than once");
    }
    if (!out.label_filename().empty() && !IsContainedRelativePath(out.label_filename())) {
      return ModelError(config, "output '" + out.name() +
                                    "': 'label_filename' must be a relative path inside the "
                                    "model directory, got '" +
                                    out.label_filename() + "'");
    }
  }
  NEREID_RETURN_IF_ERROR(ValidateBatchInputs(config, inputs));
  return ValidateBatchOutputs(config, inputs, outputs);
}

}  // namespace nereid::config::internal
