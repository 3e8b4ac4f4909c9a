#include "onnxruntime/model_io.h"

#include <string_view>

namespace nereid::backends::ort {
namespace {

const TensorInfo* FindTensor(const std::vector<TensorInfo>& tensors, std::string_view name) {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

std::string JoinNames(const std::vector<TensorInfo>& tensors) {
  std::string out;
  for (const TensorInfo& t : tensors) {
    if (!out.empty()) out += ", ";
    out += t.name;
  }
  return out;
}

Status CheckShape(const std::string& model_name, const IoConfig& io, int64_t max_batch_size,
                  const TensorInfo& model) {
  const std::string prefix = "model '" + model_name + "', tensor '" + io.name + "': ";
  if (max_batch_size > 0 && (model.shape.empty() || model.shape[0] != -1)) {
    return InvalidArgument(prefix +
                           "for the model to support batching the shape should have at least 1 "
                           "dimension and the first dimension must be -1; but shape expected by "
                           "the model is " +
                           ShapeToString(model.shape));
  }
  const std::vector<int64_t> expected = ModelSideShape(io, max_batch_size);
  bool compatible = expected.size() == model.shape.size();
  for (size_t i = 0; compatible && i < expected.size(); ++i) {
    compatible = expected[i] == -1 || model.shape[i] == -1 || expected[i] == model.shape[i];
  }
  if (compatible) return Status::Ok();
  std::string specifies = std::to_string(expected.size()) + " dimensions (";
  if (max_batch_size > 0) {
    specifies += "an initial batch dimension because max_batch_size > 0 followed by the explicit ";
    specifies += "tensor shape, making complete shape ";
  } else {
    specifies += "shape ";
  }
  return InvalidArgument(prefix + "the model expects " + std::to_string(model.shape.size()) +
                         " dimensions (shape " + ShapeToString(model.shape) +
                         ") but the model configuration specifies " + specifies +
                         ShapeToString(expected) + ")");
}

Status CheckList(const std::string& model_name, const ModelConfig& config,
                 const std::vector<IoConfig>& configured, const std::vector<TensorInfo>& model,
                 std::string_view kind) {
  for (const IoConfig& io : configured) {
    const TensorInfo* tensor = FindTensor(model, io.name);
    if (tensor == nullptr) {
      return InvalidArgument("unable to load model '" + model_name + "', unexpected inference " +
                             std::string(kind) + " '" + io.name + "', allowed " +
                             std::string(kind) + "s are: " + JoinNames(model));
    }
    if (io.data_type != tensor->data_type) {
      return InvalidArgument(
          "unable to load model '" + model_name + "', configuration expects datatype " +
          std::string(DataTypeConfigName(io.data_type)) + " for " + std::string(kind) + " '" +
          io.name + "', model provides " + std::string(DataTypeConfigName(tensor->data_type)));
    }
    if (io.ragged) {
      // Triton's onnxruntime backend: a ragged input is fed flat, so the model takes [-1].
      if (tensor->shape != std::vector<int64_t>{-1}) {
        return InvalidArgument("unable to load model '" + model_name +
                               "', configuration expects model provides input with shape [-1]  "
                               "for ragged input '" +
                               io.name + "', model provides " + ShapeToString(tensor->shape));
      }
      continue;
    }
    if (config.IsBatchOutput(io.name)) continue;  // its shape is the requests' (Triton too)
    NEREID_RETURN_IF_ERROR(CheckShape(model_name, io, config.max_batch_size, *tensor));
  }
  return Status::Ok();
}

// Each batch input target is a model input of the batch input's data type.
Status CheckBatchInputs(const std::string& model_name, const ModelConfig& config,
                        const ModelIo& io) {
  for (const BatchInputConfig& bi : config.batch_inputs) {
    for (const std::string& target : bi.target_names) {
      const TensorInfo* tensor = FindTensor(io.inputs, target);
      if (tensor == nullptr) {
        return InvalidArgument("unable to load model '" + model_name +
                               "', unexpected inference input '" + target +
                               "' (batch input), allowed inputs are: " + JoinNames(io.inputs));
      }
      if (tensor->data_type != bi.data_type) {
        return InvalidArgument(
            "unable to load model '" + model_name + "', configuration expects datatype " +
            std::string(DataTypeConfigName(bi.data_type)) + " for batch input '" + target +
            "', model provides " + std::string(DataTypeConfigName(tensor->data_type)));
      }
    }
  }
  return Status::Ok();
}

}  // namespace

bool ModelCanBatch(const ModelIo& io) {
  if (io.inputs.empty() && io.outputs.empty()) return false;
  for (const auto* list : {&io.inputs, &io.outputs}) {
    for (const TensorInfo& t : *list) {
      if (t.shape.empty() || t.shape[0] != -1) return false;
    }
  }
  return true;
}

Status ValidateModelIo(const std::string& model_name, const ModelConfig& config,
                       const ModelIo& io) {
  NEREID_RETURN_IF_ERROR(CheckList(model_name, config, config.inputs, io.inputs, "input"));
  NEREID_RETURN_IF_ERROR(CheckList(model_name, config, config.outputs, io.outputs, "output"));
  NEREID_RETURN_IF_ERROR(CheckBatchInputs(model_name, config, io));
  for (const TensorInfo& tensor : io.inputs) {
    bool configured = false;
    for (const IoConfig& in : config.inputs) configured = configured || in.name == tensor.name;
    for (const BatchInputConfig& bi : config.batch_inputs) {
      for (const std::string& t : bi.target_names) configured = configured || t == tensor.name;
    }
    if (!configured) {
      return InvalidArgument("unable to load model '" + model_name + "', model input '" +
                             tensor.name + "' is missing from the model configuration");
    }
  }
  return Status::Ok();
}

}  // namespace nereid::backends::ort
