// What an ONNX model declares about its inputs and outputs, and the checks of a model
// configuration against it. Pure code without ONNX Runtime so it is unit-testable; the ORT part
// (ort_backend.cc) only extracts TensorInfo from a session. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config_reader.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid::backends::ort {

// One model input or output. `shape` holds -1 for dynamic (symbolic or unknown) dimensions.
struct TensorInfo {
  std::string name;
  DataType data_type = DataType::kInvalid;
  std::vector<int64_t> shape;
};

struct ModelIo {
  std::vector<TensorInfo> inputs;
  std::vector<TensorInfo> outputs;
};

// True when every model input and output has rank >= 1 and a dynamic first dimension (and there
// is at least one tensor), i.e. the model accepts Triton-style batching.
bool ModelCanBatch(const ModelIo& io);

// Checks `config` against the model: every configured input and output exists in the model with
// the same datatype and a compatible shape (a -1 on either side matches any size), every model
// input is configured, and a batching config (max_batch_size > 0) has a dynamic first dimension
// in the model. A ragged input must be [-1] in the model (the core feeds it flat), a batch output's
// shape is not compared, and every batch input target must be a model input of its data type
// (batch input targets count as configured). Errors are InvalidArgument and name the model and
// the tensor.
Status ValidateModelIo(const std::string& model_name, const ModelConfig& config, const ModelIo& io);

}  // namespace nereid::backends::ort
