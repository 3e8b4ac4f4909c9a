// Models the request fuzz targets validate decoded requests against, so a fuzzed request goes
// through the same core checks as on the server (names, datatypes, shapes, batch, byte sizes).
#pragma once

#include <vector>

#include "core/model/model_info.h"
#include "core/model/request_validator.h"
#include "core/request/inference_request.h"

namespace nereid::fuzz {

inline TensorSpec Spec(const char* name, DataType type, Shape dims) {
  TensorSpec spec;
  spec.name = name;
  spec.data_type = type;
  spec.dims = std::move(dims);
  return spec;
}

inline const std::vector<ModelInfo>& Models() {
  static const std::vector<ModelInfo> models = [] {
    std::vector<ModelInfo> out(3);
    out[0].name = "simple";  // add/sub: two INT32 [16], batching
    out[0].max_batch_size = 8;
    out[0].inputs = {Spec("INPUT0", DataType::kInt32, {16}),
                     Spec("INPUT1", DataType::kInt32, {16})};
    out[0].outputs = {Spec("OUTPUT0", DataType::kInt32, {16}),
                      Spec("OUTPUT1", DataType::kInt32, {16})};
    out[1].name = "strings";  // BYTES with a variable dimension, no batching
    out[1].inputs = {Spec("INPUT0", DataType::kBytes, {-1})};
    out[1].outputs = {Spec("OUTPUT0", DataType::kBytes, {-1})};
    out[2].name = "reshaped";  // FP16 [2,2] seen by the model as [4], optional BOOL input
    out[2].max_batch_size = 4;
    out[2].inputs = {Spec("INPUT0", DataType::kFp16, {2, 2}),
                     Spec("INPUT1", DataType::kBool, {-1})};
    out[2].inputs[0].has_reshape = true;
    out[2].inputs[0].reshape = {4};
    out[2].inputs[1].optional = true;
    out[2].outputs = {Spec("OUTPUT0", DataType::kFp16, {4})};
    return out;
  }();
  return models;
}

// Validates `request` against every fuzz model; the results are not interesting, the absence of
// crashes, leaks and undefined behaviour is.
inline void ValidateAgainstModels(const InferenceRequest& request) {
  for (const ModelInfo& model : Models()) (void)ValidateRequest(model, request);
}

}  // namespace nereid::fuzz
