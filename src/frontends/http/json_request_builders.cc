#include "frontends/http/json_request_builders.h"

#include <limits>

#include "common/error_text.h"
#include "core/tensor/shape.h"

namespace nereid {
namespace {

Status AppendScalar(JsonTensorAppender& a, const JsonScalar& v) {
  switch (v.index()) {
    case 0:
      return a.AppendBool(std::get<bool>(v));
    case 1:
      return a.AppendInt(std::get<int64_t>(v));
    case 2:
      return a.AppendUint(std::get<uint64_t>(v));
    case 3:
      return a.AppendDouble(std::get<double>(v));
    default:
      return a.AppendString(std::get<std::string>(v));
  }
}

// Triton's rule: exactly one source of tensor data per input.
Status ValidateInputContent(const InputBuilder& b) {
  const bool has_binary = b.input.parameters.Find("binary_data_size") != nullptr;
  const bool has_shm = b.input.parameters.Find("shared_memory_region") != nullptr;
  const int set_count = int(b.has_data) + int(has_binary) + int(has_shm);
  if (set_count == 1) return Status::Ok();
  std::string msg =
      "Input must set only one of the following fields: 'data', 'binary_data_size' in "
      "'parameters', 'shared_memory_region' in 'parameters'. But";
  if (set_count == 0) {
    msg += " no field is set";
  } else {
    msg += " set";
    if (b.has_data) msg += " 'data'";
    if (has_binary) msg += " 'binary_data_size'";
    if (has_shm) msg += " 'shared_memory_region'";
  }
  return InvalidArgument(msg);
}

// Triton's HTTP reading of the shared memory parameters (http_server.cc CheckSharedMemoryData):
// a string region; an unsigned offset and byte size, type-checked even without a region and
// otherwise ignored; a byte size left out is 0. What reaches the core is then always well-typed
// (core/shm/shm_tensors.h; its own texts are Triton's gRPC ones).
Status ReadShmParameters(Parameters& p) {
  const ParameterValue* region = p.Find("shared_memory_region");
  if (region != nullptr && !std::holds_alternative<std::string>(*region)) {
    return InvalidArgument(
        "Unable to parse 'shared_memory_region': attempt to access JSON non-string as string");
  }
  for (const char* key : {"shared_memory_offset", "shared_memory_byte_size"}) {
    if (p.Find(key) != nullptr && !GetUint(p, key)) {
      return InvalidArgument(std::string("Unable to parse '") + key +
                             "': attempt to access JSON non-unsigned-integer as unsigned-integer");
    }
    if (region == nullptr) p.Remove(key);
  }
  if (region != nullptr && p.Find("shared_memory_byte_size") == nullptr) {
    p.Set("shared_memory_byte_size", uint64_t{0});
  }
  return Status::Ok();
}

Status FinishJsonData(InputBuilder& b, int64_t element_count, ParsedInferHeader* out) {
  if (!b.appender) {
    b.appender.emplace(b.input.data_type, b.buffer.get());
    for (const JsonScalar& v : b.pending) {
      Status s = AppendScalar(*b.appender, v);
      if (!s.ok()) return InvalidArgument("Unable to parse 'data': " + s.message());
    }
    b.pending.clear();
  }
  if (b.appender->type() != b.input.data_type) return InvalidArgument("Unable to parse 'datatype'");
  if (b.appender->count() != element_count) {
    return InvalidArgument(
        "Unable to parse 'data': Shape does not match true shape of 'data' field");
  }
  b.input.data = std::span<const char>(b.buffer->data(), b.buffer->size());
  out->request->KeepAlive(b.buffer);
  return Status::Ok();
}

Status FinishBinarySize(InputBuilder& b, ParsedInferHeader* out) {
  const std::optional<int64_t> size = GetInt(b.input.parameters, "binary_data_size");
  if (!size || *size < 0) return InvalidArgument("Unable to parse 'binary_data_size'");
  b.input.parameters.Remove("binary_data_size");
  if (b.input.data_type != DataType::kBytes) {
    const std::string name = ClientText(b.input.name);
    auto expected = FixedByteSize(b.input.data_type, b.input.shape, "input '" + name + "'");
    if (!expected.ok()) return expected.status();
    if (*expected != static_cast<uint64_t>(*size)) {
      return InvalidArgument("unexpected total byte size " + std::to_string(*size) +
                             " for input '" + name + "', expecting " + std::to_string(*expected));
    }
  }
  out->binary_inputs.push_back({out->request->inputs.size(), static_cast<uint64_t>(*size)});
  return Status::Ok();
}

}  // namespace

Status FinishInput(InputBuilder& b, NameSet* names, ParsedInferHeader* out) {
  NEREID_RETURN_IF_ERROR(ValidateInputContent(b));
  NEREID_RETURN_IF_ERROR(ReadShmParameters(b.input.parameters));
  if (!b.has_name) return InvalidArgument("Unable to parse 'name'");
  const std::string name = ClientText(b.input.name);
  if (!names->Insert(b.input.name)) {
    return InvalidArgument("input '" + name + "' already exists in request");
  }
  if (!b.has_datatype) return InvalidArgument("Unable to parse 'datatype'");
  const auto type = DataTypeFromWireName(b.datatype_name);
  if (!type) {
    return InvalidArgument("invalid datatype '" + ClientText(b.datatype_name) + "' for input '" +
                           name + "'");
  }
  b.input.data_type = *type;
  if (!b.has_shape) return InvalidArgument("Unable to parse 'shape'");
  // Dims are non-negative here (the parser refuses others), so no count means overflow. Both
  // checks come before the data is read, as in Triton, whose QA matches these words.
  const auto count = ElementCount(b.input.shape);
  if (!count) {
    return InvalidArgument("Unable to parse 'shape': the shape " + ShapeToString(b.input.shape) +
                           " of input '" + name +
                           "' causes total element count to exceed maximum size of " +
                           std::to_string(std::numeric_limits<int64_t>::max()));
  }
  if (const size_t elem = DataTypeByteSize(b.input.data_type); elem != 0) {
    int64_t bytes = 0;
    if (__builtin_mul_overflow(*count, static_cast<int64_t>(elem), &bytes)) {
      return InvalidArgument("byte size overflow for input '" + name + "'");
    }
  }
  if (b.has_data) {
    NEREID_RETURN_IF_ERROR(FinishJsonData(b, *count, out));
  } else if (b.input.parameters.Find("binary_data_size") != nullptr) {
    NEREID_RETURN_IF_ERROR(FinishBinarySize(b, out));
  }
  // Shared-memory inputs keep their parameters and no data; the core resolves the region.
  out->request->inputs.push_back(std::move(b.input));
  return Status::Ok();
}

Status FinishOutput(OutputBuilder& b, NameSet* names, ParsedInferHeader* out) {
  if (!b.has_name) return InvalidArgument("Unable to parse 'name'");
  if (!names->Insert(b.output.name)) {
    return InvalidArgument("output '" + ClientText(b.output.name) + "' already exists in request");
  }
  NEREID_RETURN_IF_ERROR(ReadShmParameters(b.output.parameters));
  const Parameters& p = b.output.parameters;
  const bool binary_given = p.Find("binary_data") != nullptr;
  const std::optional<bool> binary = GetBool(p, "binary_data");
  if (binary_given && !binary) return InvalidArgument("Unable to parse 'binary_data'");
  const bool cls_given = p.Find("classification") != nullptr;
  const std::optional<int64_t> cls = GetInt(p, "classification");
  if (cls_given && (!cls || *cls < 0)) return InvalidArgument("Unable to set 'classification'");
  if (p.Find("shared_memory_region") != nullptr) {
    if (cls_given) {
      return InvalidArgument("Output can't set both 'shared_memory_region' and 'classification'");
    }
    if (binary.value_or(false)) {
      return InvalidArgument("Output can't set both 'shared_memory_region' and 'binary_data'");
    }
  }
  out->request->outputs.push_back(std::move(b.output));
  return Status::Ok();
}

Status FinishRequest(bool saw_inputs, ParsedInferHeader* out) {
  if (!saw_inputs) return InvalidArgument("Unable to parse 'inputs'");
  Parameters& params = out->request->parameters;
  if (params.Find("binary_data_output") != nullptr) {
    const std::optional<bool> bdo = GetBool(params, "binary_data_output");
    if (!bdo) return InvalidArgument("Unable to parse 'binary_data_output'");
    out->binary_output_default = *bdo;
    params.Remove("binary_data_output");
  }
  // Schedule-policy parameters must be unsigned integers (Triton's TritonJson AsUInt).
  for (const char* key : {"priority", "timeout"}) {
    if (params.Find(key) != nullptr && !GetUint(params, key)) {
      return InvalidArgument(std::string("Unable to parse '") + key +
                             "': attempt to access JSON non-unsigned-integer as unsigned-integer");
    }
  }
  // Sequence parameters as Triton's HTTP frontend reads them: an unsigned or string ID, boolean
  // flags.
  if (const ParameterValue* id = params.Find("sequence_id");
      id != nullptr && !std::holds_alternative<std::string>(*id) &&
      !GetUint(params, "sequence_id")) {
    return InvalidSequenceId();
  }
  for (const char* key : {"sequence_start", "sequence_end"}) {
    if (params.Find(key) != nullptr && !GetBool(params, key)) {
      return InvalidArgument(std::string("Unable to parse '") + key +
                             "': attempt to access JSON non-boolean as boolean");
    }
  }
  for (const auto& [key, value] : params) {
    if (key.rfind("triton_", 0) == 0) {
      return InvalidArgument(
          "parameter keys starting with 'triton_' are reserved for Triton usage and should not "
          "be specified.");
    }
  }
  return Status::Ok();
}

}  // namespace nereid
