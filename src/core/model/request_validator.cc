#include "core/model/request_validator.h"

#include <string>
#include <vector>

#include "common/error_text.h"
#include "core/request/index_marks.h"
#include "core/tensor/bytes_tensor.h"

namespace nereid {
namespace {

std::string Prefix(const InferenceRequest& r) {
  return "[request id: " + (r.id.empty() ? std::string("<id_unknown>") : ClientText(r.id)) + "] ";
}

// Name checks are O(inputs + model inputs): each name is looked up once (hashed) and marked.
Status CheckInputNames(const ModelInfo& model, const InferenceRequest& r) {
  IndexMarks given(model.inputs.size());
  for (const InferInput& in : r.inputs) {
    const TensorSpec* spec = model.FindInput(in.name);
    if (spec == nullptr) {
      return InvalidArgument(Prefix(r) + "unexpected inference input '" + ClientText(in.name) +
                             "' for model '" + model.name + "'");
    }
    const size_t index = static_cast<size_t>(spec - model.inputs.data());
    if (given.IsSet(index)) {  // in.name equals a configured name now: no need to bound it
      return InvalidArgument("input '" + in.name + "' already exists in request");
    }
    given.Set(index);
  }
  std::string missing;
  for (size_t i = 0; i < model.inputs.size(); ++i) {
    const TensorSpec& spec = model.inputs[i];
    if (!spec.optional && !given.IsSet(i)) {
      missing += (missing.empty() ? "'" : ", '") + spec.name + "'";
    }
  }
  if (!missing.empty()) {
    return InvalidArgument(Prefix(r) + "expected " + std::to_string(model.inputs.size()) +
                           " inputs but got " + std::to_string(r.inputs.size()) +
                           " inputs for model '" + model.name + "'. Missing required input(s) [" +
                           missing + "]. Please provide all required input(s).");
  }
  return Status::Ok();
}

Status CheckOutputNames(const ModelInfo& model, const InferenceRequest& r) {
  IndexMarks requested(model.outputs.size());
  for (const RequestedOutput& out : r.outputs) {
    const TensorSpec* spec = model.FindOutput(out.name);
    if (spec == nullptr) {
      return InvalidArgument(Prefix(r) + "unexpected inference output '" + ClientText(out.name) +
                             "' for model '" + model.name + "'");
    }
    const size_t index = static_cast<size_t>(spec - model.outputs.data());
    if (requested.IsSet(index)) {
      return InvalidArgument("output '" + out.name + "' already exists in request");
    }
    requested.Set(index);
  }
  return Status::Ok();
}

// BOOL elements are one byte, 0 (false) or 1 (true), whichever way they arrived (JSON, binary
// tail, gRPC raw or typed contents): any other byte is refused, so backends never see a bool
// object representation that C++ leaves undefined.
Status CheckBoolData(const InferenceRequest& r, const InferInput& in) {
  for (size_t i = 0; i < in.data.size(); ++i) {
    const auto byte = static_cast<unsigned char>(in.data[i]);
    if (byte > 1) {
      return InvalidArgument(Prefix(r) + "invalid value " + std::to_string(byte) + " at element " +
                             std::to_string(i) + " of BOOL input '" + in.name +
                             "': BOOL elements must be 0 (false) or 1 (true)");
    }
  }
  return Status::Ok();
}

Status CheckData(const ModelInfo& model, const InferenceRequest& r, const InferInput& in) {
  auto count = ElementCount(in.shape);
  if (!count) {
    return InvalidArgument(Prefix(r) + "invalid shape " + ShapeToString(in.shape) + " for input '" +
                           in.name + "'");
  }
  if (in.data_type == DataType::kBytes) {
    auto n = CountBytesElements(in.data);
    if (!n.ok()) {
      return InvalidArgument(Prefix(r) + "input '" + in.name + "': " + n.status().message());
    }
    if (*n != *count) {
      return InvalidArgument(Prefix(r) + "expected " + std::to_string(*count) +
                             " string elements for inference input '" + in.name + "', got " +
                             std::to_string(*n));
    }
    return Status::Ok();
  }
  auto expected = FixedByteSize(in.data_type, in.shape, "input '" + in.name + "'");
  if (!expected.ok()) return InvalidArgument(Prefix(r) + expected.status().message());
  if (*expected != in.data.size()) {
    return InvalidArgument(Prefix(r) + "input byte size mismatch for input '" + in.name +
                           "' for model '" + model.name + "'. Expected " +
                           std::to_string(*expected) + ", got " + std::to_string(in.data.size()));
  }
  if (in.data_type == DataType::kBool) return CheckBoolData(r, in);
  return Status::Ok();
}

}  // namespace

StatusOr<int64_t> ValidateRequest(const ModelInfo& model, const InferenceRequest& r) {
  NEREID_RETURN_IF_ERROR(CheckInputNames(model, r));
  NEREID_RETURN_IF_ERROR(CheckOutputNames(model, r));
  const bool batching = model.max_batch_size > 0;
  int64_t batch = -1;
  for (const InferInput& in : r.inputs) {
    const TensorSpec& spec = *model.FindInput(in.name);
    if (in.data_type != spec.data_type) {
      return InvalidArgument(Prefix(r) + "inference input '" + in.name + "' data-type is '" +
                             std::string(DataTypeWireName(in.data_type)) + "', but model '" +
                             model.name + "' expects '" +
                             std::string(DataTypeWireName(spec.data_type)) + "'");
    }
    std::span<const int64_t> dims(in.shape);
    if (batching) {
      if (in.shape.empty()) {
        return InvalidArgument(Prefix(r) + "input '" + in.name +
                               "' has no shape but model requires batch dimension for '" +
                               model.name + "'");
      }
      if (batch == -1) batch = in.shape[0];
      if (in.shape[0] != batch) {
        return InvalidArgument(Prefix(r) + "input '" + in.name +
                               "' batch size does not match other inputs for '" + model.name + "'");
      }
      dims = dims.subspan(1);
    }
    if (!ShapeMatches(dims, spec.dims)) {
      Shape full = spec.dims;
      if (batching) full.insert(full.begin(), -1);
      return InvalidArgument(Prefix(r) + "unexpected shape for input '" + in.name +
                             "' for model '" + model.name + "'. Expected " + ShapeToString(full) +
                             ", got " + ShapeToString(in.shape));
    }
    NEREID_RETURN_IF_ERROR(CheckData(model, r, in));
  }
  if (!batching) return int64_t{0};
  if (batch < 1) {
    return InvalidArgument(Prefix(r) + "inference request batch-size must be >= 1 for '" +
                           model.name + "', got " + std::to_string(batch));
  }
  if (batch > model.max_batch_size) {
    return InvalidArgument(Prefix(r) + "inference request batch-size must be <= " +
                           std::to_string(model.max_batch_size) + " for '" + model.name +
                           "', got " + std::to_string(batch));
  }
  return batch;
}

}  // namespace nereid
