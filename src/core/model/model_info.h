// ModelInfo: what the request path needs from a model configuration, computed once at load so
// validation and execution never walk the protobuf per request.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/tensor/shape.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

struct TensorSpec {
  std::string name;
  DataType data_type = DataType::kInvalid;
  Shape dims;  // without the batch dimension
  bool has_reshape = false;
  Shape reshape;  // model-side dims (without batch) when has_reshape
  bool optional = false;
  bool ragged = false;  // allow_ragged_batch (inputs only)
};

// Triton's batch_input kinds (model_config.proto numbering).
enum class BatchInputKind {
  kElementCount = 0,
  kAccumulatedElementCount = 1,
  kAccumulatedElementCountWithZero = 2,
  kMaxElementCountAsShape = 3,
  kItemShape = 4,
  kItemShapeFlatten = 5,
};

// An extra model input computed from the whole batch (config `batch_input`); validated config:
// one source input, INT32 or FP32, at least one target name.
struct BatchInputSpec {
  BatchInputKind kind = BatchInputKind::kElementCount;
  std::vector<std::string> target_names;
  DataType data_type = DataType::kInt32;
  std::string source_input;
};

// An output the model returns for the whole batch and the core scatters back to the requests,
// each getting the output's dims with every -1 taken from its `source_input` shape (config
// `batch_output`, kind BATCH_SCATTER_WITH_INPUT_SHAPE, the only kind).
struct BatchOutputSpec {
  std::vector<std::string> target_names;
  std::string source_input;
};

struct ModelInfo {
  std::string name;
  int64_t version = 0;
  bool decoupled = false;  // model_transaction_policy { decoupled: true }: 0..N responses
  int max_batch_size = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  std::vector<BatchInputSpec> batch_inputs;
  std::vector<BatchOutputSpec> batch_outputs;
  // Set from the backend's BackendInfo: executions carry ExecuteArgs::requests.
  bool wants_request_info = false;

  // True when executions need the per-request view of batch_io.h (ragged inputs, batch inputs
  // or batch outputs).
  bool HasBatchIo() const;
  // The batch_output that lists `output` as a target, or nullptr.
  const BatchOutputSpec* FindBatchOutput(std::string_view output) const;

  static ModelInfo FromConfig(const inference::ModelConfig& config, int64_t version);
  // O(1) for a ModelInfo from FromConfig (request validation looks up every tensor a client
  // names); a scan when `inputs`/`outputs` were filled by hand or changed since.
  const TensorSpec* FindInput(std::string_view name) const;
  const TensorSpec* FindOutput(std::string_view name) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using Index = std::unordered_map<std::string, size_t, Hash, std::equal_to<>>;
  static const TensorSpec* Find(const std::vector<TensorSpec>& specs, const Index& index,
                                std::string_view name);

  Index input_index_;  // name -> position; built by FromConfig
  Index output_index_;
};

// Maps `shape` (optionally led by a batch dimension) from one per-item layout to another with the
// same element count, resolving a single -1 in `to` from the element count. Used for reshape in
// both directions.
StatusOr<Shape> Relayout(std::span<const int64_t> shape, bool has_batch,
                         std::span<const int64_t> to, std::string_view tensor_name);

}  // namespace nereid
