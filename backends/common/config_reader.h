// The parts of a model configuration (Triton's JSON rendering of inference.ModelConfig) that the
// backend plugins use, read once at model load so no JSON is touched at execute time.
//
// ModelConfig is a plain value: immutable after ParseModelConfig, safe to share across threads.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid::backends {

// One `input` or `output` entry.
struct IoConfig {
  std::string name;
  DataType data_type = DataType::kInvalid;
  std::vector<int64_t> dims;
  std::optional<std::vector<int64_t>> reshape;  // reshape.shape, when the entry has a reshape
  bool optional = false;                        // inputs only
  bool ragged = false;                          // allow_ragged_batch (inputs only)
};

// One `batch_input` entry (validated by the core): extra model inputs the core computes from the
// whole batch and passes by their target names.
struct BatchInputConfig {
  std::string kind;  // e.g. "BATCH_ACCUMULATED_ELEMENT_COUNT"
  std::vector<std::string> target_names;
  DataType data_type = DataType::kInt32;
  std::string source_input;
};

struct ModelConfig {
  std::string name;
  std::string platform;
  std::string backend;
  int64_t max_batch_size = 0;
  std::vector<IoConfig> inputs;
  std::vector<IoConfig> outputs;
  std::vector<BatchInputConfig> batch_inputs;
  // Target names of every `batch_output`: outputs the core scatters back by the requests' shapes.
  std::vector<std::string> batch_output_targets;
  // `parameters`: key -> string_value, in document order.
  std::vector<std::pair<std::string, std::string>> parameters;
  // optimization.graph.level (0 when absent, as protobuf renders it).
  int64_t graph_optimization_level = 0;

  // The string_value of parameter `key`, or nullptr.
  const std::string* FindParameter(std::string_view key) const;
  // True when `output` is the target of a batch_output.
  bool IsBatchOutput(std::string_view output) const;
};

// Parses `json`. Errors are InvalidArgument naming the offending field.
StatusOr<ModelConfig> ParseModelConfig(std::string_view json);

// The shape the framework sees for `io`: reshape.shape when present, else dims, with a leading -1
// batch dimension when max_batch_size > 0; [-1] for a ragged input (the core passes it flat, as
// Triton's backends do).
std::vector<int64_t> ModelSideShape(const IoConfig& io, int64_t max_batch_size);

// Parameter `key` as an integer in [min_value, max_value]; `fallback` when absent.
StatusOr<int64_t> IntParameter(const ModelConfig& config, std::string_view key, int64_t fallback,
                               int64_t min_value, int64_t max_value);

// Parameter `key` as a boolean ("1"/"0", "true"/"false", "on"/"off", any case); `fallback` when
// absent.
StatusOr<bool> BoolParameter(const ModelConfig& config, std::string_view key, bool fallback);

// "[-1,16]".
std::string ShapeToString(std::span<const int64_t> shape);

}  // namespace nereid::backends
