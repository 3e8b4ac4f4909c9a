// Internal to the onnxruntime plugin: the only header that includes ONNX Runtime, shared by its
// two ORT translation units (ort_backend.cc: backend, model load, sessions; ort_instance.cc:
// execution). Keep the ORT-including translation units few: the header is heavy to compile.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "nereid/backend_api.h"
#include "nereid/data_type.h"

namespace nereid::backends::ort {

// ORT element type <-> DataType. FromOrtType returns nullopt for types Nereid has no name for
// (complex, float8, int4, ...). ToOrtType returns UNDEFINED for kInvalid.
std::optional<DataType> FromOrtType(ONNXTensorElementDataType type);
ONNXTensorElementDataType ToOrtType(DataType type);

// What an instance needs to run a model; built once at load, immutable, shared by the instances.
struct ExecutionPlan {
  struct Tensor {
    std::string name;
    DataType data_type = DataType::kInvalid;
    ONNXTensorElementDataType ort_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
  };
  std::string model_name;
  std::vector<Tensor> inputs;   // configured inputs, config order
  std::vector<Tensor> outputs;  // configured outputs, config order
};

// Makes an instance that runs `session` (not thread-safe, like every ModelInstance). `env` is kept
// alive as long as the instance because sessions must not outlive the ORT environment.
std::unique_ptr<backend::ModelInstance> MakeOrtInstance(std::shared_ptr<const ExecutionPlan> plan,
                                                        std::shared_ptr<Ort::Env> env,
                                                        Ort::Session session);

}  // namespace nereid::backends::ort
