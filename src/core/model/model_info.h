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
  Shape dims;          // without the batch dimension
  bool has_reshape = false;
  Shape reshape;       // model-side dims (without batch) when has_reshape
  bool optional = false;
};

struct ModelInfo {
  std::string name;
  int64_t version = 0;
  int max_batch_size = 0;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;

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
