#include "frontends/grpc/grpc_codec.h"

#include <charconv>
#include <cstring>
#include <exception>

#include "common/error_text.h"
#include "core/request/name_set.h"
#include "core/request/request_limits.h"
#include "core/tensor/bytes_tensor.h"
#include "grpc_service.pb.h"

namespace nereid {
namespace {

using inference::InferTensorContents;
using InputTensor = inference::ModelInferRequest::InferInputTensor;

template <typename Map>
Status ParametersFromProto(const Map& map, size_t limit, Status (*too_many)(), Parameters* out) {
  if (map.size() > limit) return too_many();
  for (const auto& [key, value] : map) {
    NEREID_ASSIGN_OR_RETURN(ParameterValue v, ParameterFromProto(key, value));
    out->Set(key, std::move(v));
  }
  return Status::Ok();
}

// Appends every element of `values` to `out` as little-endian `T` (the host is little-endian).
template <typename T, typename Repeated>
void AppendAs(const Repeated& values, std::string* out) {
  const size_t start = out->size();
  out->resize(start + values.size() * sizeof(T));
  char* p = out->data() + start;
  for (const auto& v : values) {
    const T t = static_cast<T>(v);
    std::memcpy(p, &t, sizeof(T));
    p += sizeof(T);
  }
}

// The name of the typed-contents field a datatype uses; nullptr when it has none (FP16, BF16).
const char* ContentsFieldFor(DataType t) {
  switch (t) {
    case DataType::kBool:
      return "bool_contents";
    case DataType::kUint8:
    case DataType::kUint16:
    case DataType::kUint32:
      return "uint_contents";
    case DataType::kUint64:
      return "uint64_contents";
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
      return "int_contents";
    case DataType::kInt64:
      return "int64_contents";
    case DataType::kFp32:
      return "fp32_contents";
    case DataType::kFp64:
      return "fp64_contents";
    case DataType::kBytes:
      return "bytes_contents";
    default:
      return nullptr;
  }
}

// The first non-empty contents field other than `expected`, or nullptr.
// The first non-empty typed field other than `expected`, in Triton's order, with the datatype
// Triton names for it in its error ("of type 'INT32'"); {nullptr, nullptr} when there is none.
std::pair<const char*, const char*> OtherContentsField(const InferTensorContents& c,
                                                       const char* expected) {
  const struct {
    const char* field;
    const char* type;
    int size;
  } fields[] = {{"bool_contents", "BOOL", c.bool_contents_size()},
                {"int_contents", "INT32", c.int_contents_size()},
                {"int64_contents", "INT64", c.int64_contents_size()},
                {"uint_contents", "UINT32", c.uint_contents_size()},
                {"uint64_contents", "UINT64", c.uint64_contents_size()},
                {"fp32_contents", "FP32", c.fp32_contents_size()},
                {"fp64_contents", "FP64", c.fp64_contents_size()},
                {"bytes_contents", "BYTES", c.bytes_contents_size()}};
  for (const auto& f : fields) {
    if (f.size > 0 && (expected == nullptr || std::strcmp(f.field, expected) != 0)) {
      return {f.field, f.type};
    }
  }
  return {nullptr, nullptr};
}

void ConvertContents(DataType t, const InferTensorContents& c, std::string* out) {
  switch (t) {
    case DataType::kBool:
      return AppendAs<uint8_t>(c.bool_contents(), out);
    case DataType::kUint8:
      return AppendAs<uint8_t>(c.uint_contents(), out);
    case DataType::kUint16:
      return AppendAs<uint16_t>(c.uint_contents(), out);
    case DataType::kUint32:
      return AppendAs<uint32_t>(c.uint_contents(), out);
    case DataType::kUint64:
      return AppendAs<uint64_t>(c.uint64_contents(), out);
    case DataType::kInt8:
      return AppendAs<int8_t>(c.int_contents(), out);
    case DataType::kInt16:
      return AppendAs<int16_t>(c.int_contents(), out);
    case DataType::kInt32:
      return AppendAs<int32_t>(c.int_contents(), out);
    case DataType::kInt64:
      return AppendAs<int64_t>(c.int64_contents(), out);
    case DataType::kFp32:
      return AppendAs<float>(c.fp32_contents(), out);
    case DataType::kFp64:
      return AppendAs<double>(c.fp64_contents(), out);
    case DataType::kBytes:
      for (const std::string& e : c.bytes_contents()) AppendBytesElement(e, out);
      return;
    default:
      return;
  }
}

// Typed `contents` -> one owned little-endian buffer the input views.
Status DecodeTypedContents(const InputTensor& tensor, const std::string& model, InferInput* in,
                           InferenceRequest* request) {
  const char* field = ContentsFieldFor(in->data_type);
  const std::string name = ClientText(in->name);
  if (field == nullptr) {
    return InvalidArgument("input '" + name + "' for model '" + ClientText(model) +
                           "' has datatype " + std::string(DataTypeWireName(in->data_type)) +
                           ", which has no typed 'contents' field; send it in "
                           "raw_input_contents");
  }
  if (const auto [other, other_type] = OtherContentsField(tensor.contents(), field); other) {
    return InvalidArgument("unexpected explicit tensor data for input tensor '" + name +
                           "' for model '" + ClientText(model) + "' of type '" + other_type +
                           "', expected datatype '" + std::string(DataTypeWireName(in->data_type)) +
                           "'");
  }
  auto buffer = std::make_shared<std::string>();
  ConvertContents(in->data_type, tensor.contents(), buffer.get());
  in->data = std::span<const char>(buffer->data(), buffer->size());
  request->KeepAlive(std::move(buffer));
  return Status::Ok();
}

bool UsesSharedMemory(const InputTensor& tensor) {
  return tensor.parameters().count("shared_memory_region") != 0;
}

// `*raw_index`: the next raw_input_contents entry; inputs read from shared memory take none.
Status DecodeInput(const inference::ModelInferRequest& m, int index, int* raw_index,
                   InferenceRequest* request) {
  const InputTensor& tensor = m.inputs(index);
  InferInput in;
  in.name = tensor.name();
  const auto type = DataTypeFromWireName(tensor.datatype());
  if (!type) {
    return InvalidArgument("invalid datatype '" + ClientText(tensor.datatype()) + "' for input '" +
                           ClientText(in.name) + "'");
  }
  in.data_type = *type;
  in.shape.assign(tensor.shape().begin(), tensor.shape().end());
  NEREID_RETURN_IF_ERROR(ParametersFromProto(tensor.parameters(), kMaxTensorParameters,
                                             TooManyInputParameters, &in.parameters));
  if (UsesSharedMemory(tensor)) {
    // The server points the input at the region (core/shm/shm_tensors.h).
    if (tensor.has_contents()) {
      return InvalidArgument(
          "unexpected 'content' provided when using shared memory for input tensor '" +
          ClientText(in.name) + "' for model '" + ClientText(m.model_name()) + "'");
    }
  } else if (m.raw_input_contents_size() > 0) {
    if (tensor.has_contents()) {
      return InvalidArgument(
          "contents field must not be specified when using "
          "raw_input_contents for '" +
          ClientText(in.name) + "' for model '" + ClientText(m.model_name()) + "'");
    }
    const std::string& raw = m.raw_input_contents((*raw_index)++);
    in.data = std::span<const char>(raw.data(), raw.size());
  } else if (tensor.has_contents()) {
    NEREID_RETURN_IF_ERROR(DecodeTypedContents(tensor, m.model_name(), &in, request));
  }
  request->inputs.push_back(std::move(in));
  return Status::Ok();
}

}  // namespace

StatusOr<int64_t> ParseModelVersion(const std::string& version) {
  if (version.empty()) return int64_t{-1};
  int64_t v = -1;
  const char* end = version.data() + version.size();
  auto [ptr, ec] = std::from_chars(version.data(), end, v);
  if (ec != std::errc() || ptr != end || v < 0) {
    return InvalidArgument("failed to get model version from specified version string '" +
                           ClientText(version) + "': version must be a non-negative integer");
  }
  return v;
}

StatusOr<ParameterValue> ParameterFromProto(const std::string& key,
                                            const inference::InferParameter& p) {
  switch (p.parameter_choice_case()) {
    case inference::InferParameter::kBoolParam:
      return ParameterValue(p.bool_param());
    case inference::InferParameter::kInt64Param:
      return ParameterValue(p.int64_param());
    case inference::InferParameter::kStringParam:
      return ParameterValue(p.string_param());
    case inference::InferParameter::kDoubleParam:
      return ParameterValue(p.double_param());
    case inference::InferParameter::kUint64Param:
      return ParameterValue(p.uint64_param());
    default:
      break;
  }
  // Triton's words for a parameter whose value is not set (its text predates double_param and
  // uint64_param, which both accept).
  return InvalidArgument("invalid value type for '" + ClientText(key) +
                         "' parameter, expected int64_param, bool_param, or string_param.");
}

void ParameterToProto(const ParameterValue& value, inference::InferParameter* p) {
  if (const bool* b = std::get_if<bool>(&value)) {
    p->set_bool_param(*b);
  } else if (const int64_t* i = std::get_if<int64_t>(&value)) {
    p->set_int64_param(*i);
  } else if (const uint64_t* u = std::get_if<uint64_t>(&value)) {
    p->set_uint64_param(*u);
  } else if (const double* d = std::get_if<double>(&value)) {
    p->set_double_param(*d);
  } else {
    p->set_string_param(std::get<std::string>(value));
  }
}

namespace {

// The schedule-policy parameters, typed as Triton's gRPC frontend requires (grpc/infer_handler.cc
// SetInferenceRequestMetadata). A negative timeout is refused too (Triton would wrap it to a huge
// unsigned value, i.e. no timeout).
Status CheckScheduleParameters(const Parameters& params) {
  if (const ParameterValue* p = params.Find("priority")) {
    if (const int64_t* i = std::get_if<int64_t>(p)) {
      if (*i < 0) return InvalidArgument("invalid value for 'priority', expected value >= 0.");
    } else if (!std::holds_alternative<uint64_t>(*p)) {
      return InvalidArgument(
          "invalid value type for 'priority' parameter, expected int64_param or uint64_param.");
    }
  }
  // Sequence parameters (Triton's SetInferenceRequestMetadata); uint64_param is accepted too. A
  // negative int64_param is refused as over HTTP (Triton would wrap it to a huge unsigned ID).
  if (const ParameterValue* id = params.Find("sequence_id")) {
    if (std::holds_alternative<bool>(*id) || std::holds_alternative<double>(*id)) {
      return InvalidArgument(
          "invalid value type for 'sequence_id' parameter, expected int64_param or "
          "string_param.");
    }
    if (const int64_t* i = std::get_if<int64_t>(id); i != nullptr && *i < 0) {
      return InvalidSequenceId();
    }
  }
  for (const char* key : {"sequence_start", "sequence_end"}) {
    if (const ParameterValue* f = params.Find(key);
        f != nullptr && !std::holds_alternative<bool>(*f)) {
      return InvalidArgument(std::string("invalid value type for '") + key +
                             "' parameter, expected bool_param.");
    }
  }
  if (const ParameterValue* t = params.Find("timeout")) {
    const int64_t* i = std::get_if<int64_t>(t);
    if (i == nullptr) {
      return InvalidArgument("invalid value type for 'timeout' parameter, expected int64_param.");
    }
    if (*i < 0) return InvalidArgument("invalid value for 'timeout', expected value >= 0.");
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<InferenceRequest>> DecodeUnguarded(
    std::shared_ptr<const inference::ModelInferRequest> message) {
  const inference::ModelInferRequest& m = *message;
  auto request = std::make_unique<InferenceRequest>();
  request->model_name = m.model_name();
  NEREID_ASSIGN_OR_RETURN(request->model_version, ParseModelVersion(m.model_version()));
  request->id = m.id();
  if (static_cast<size_t>(m.inputs_size()) > kMaxRequestInputs) return TooManyInputs();
  if (static_cast<size_t>(m.outputs_size()) > kMaxRequestOutputs) return TooManyOutputs();
  int shm_inputs = 0;
  for (const InputTensor& tensor : m.inputs()) shm_inputs += UsesSharedMemory(tensor) ? 1 : 0;
  if (m.raw_input_contents_size() > 0 &&
      m.raw_input_contents_size() != m.inputs_size() - shm_inputs) {
    return InvalidArgument("expected " + std::to_string(m.inputs_size()) + " inputs but got " +
                           std::to_string(m.raw_input_contents_size()) +
                           " raw_input_contents for model '" + ClientText(m.model_name()) + "'");
  }
  NEREID_RETURN_IF_ERROR(ParametersFromProto(m.parameters(), kMaxRequestParameters,
                                             TooManyRequestParameters, &request->parameters));
  NEREID_RETURN_IF_ERROR(CheckScheduleParameters(request->parameters));
  for (const auto& [key, value] : request->parameters) {
    if (key.rfind("triton_", 0) != 0) continue;
    if (key != kEnableEmptyFinalResponse) {
      return InvalidArgument(
          "parameter keys starting with 'triton_' are reserved for Triton usage. Only the "
          "following keys starting with 'triton_' are allowed: " +
          std::string(kEnableEmptyFinalResponse));
    }
    if (!GetBool(request->parameters, kEnableEmptyFinalResponse).has_value()) {
      return InvalidArgument("invalid value type for '" + std::string(kEnableEmptyFinalResponse) +
                             "' parameter, expected bool_param.");
    }
  }
  // Repeated names fail as Triton's TRITONSERVER_InferenceRequestAdd*Input/RequestedOutput do.
  NameSet input_names;
  int raw_index = 0;
  request->inputs.reserve(m.inputs_size());
  for (int i = 0; i < m.inputs_size(); ++i) {
    if (!input_names.Insert(m.inputs(i).name())) {
      return InvalidArgument("input '" + ClientText(m.inputs(i).name()) +
                             "' already exists in request");
    }
    NEREID_RETURN_IF_ERROR(DecodeInput(m, i, &raw_index, request.get()));
  }
  NameSet output_names;
  request->outputs.reserve(m.outputs_size());
  for (const auto& o : m.outputs()) {
    if (!output_names.Insert(o.name())) {
      return InvalidArgument("output '" + ClientText(o.name()) + "' already exists in request");
    }
    RequestedOutput out;
    out.name = o.name();
    NEREID_RETURN_IF_ERROR(ParametersFromProto(o.parameters(), kMaxTensorParameters,
                                               TooManyOutputParameters, &out.parameters));
    request->outputs.push_back(std::move(out));
  }
  request->KeepAlive(std::move(message));
  return request;
}

}  // namespace

// Decoding allocates in proportion to the message (typed contents converted to raw bytes): an
// allocation failure answers this call instead of ending the completion-queue thread.
StatusOr<std::unique_ptr<InferenceRequest>> DecodeModelInferRequest(
    std::shared_ptr<const inference::ModelInferRequest> message) {
  try {
    return DecodeUnguarded(std::move(message));
  } catch (const std::exception& e) {
    return Unavailable(std::string("the request could not be decoded: ") + e.what());
  }
}

void EncodeModelInferResponse(InferenceResponse& response, inference::ModelInferResponse* out) {
  out->set_model_name(response.model_name);
  out->set_model_version(std::to_string(response.model_version));
  out->set_id(response.id);
  for (const auto& [key, value] : response.parameters) {
    ParameterToProto(value, &(*out->mutable_parameters())[key]);
  }
  out->mutable_outputs()->Reserve(static_cast<int>(response.outputs.size()));
  out->mutable_raw_output_contents()->Reserve(static_cast<int>(response.outputs.size()));
  for (InferOutput& o : response.outputs) {
    auto* tensor = out->add_outputs();
    tensor->set_name(o.name);
    tensor->set_datatype(std::string(DataTypeWireName(o.data_type)));
    tensor->mutable_shape()->Add(o.shape.begin(), o.shape.end());
    out->add_raw_output_contents(std::move(o.data));
  }
}

}  // namespace nereid
