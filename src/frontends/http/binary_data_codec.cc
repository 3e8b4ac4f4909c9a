#include "frontends/http/binary_data_codec.h"

#include <limits>

#include "common/error_text.h"
#include "core/tensor/bytes_tensor.h"

namespace nereid {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status CheckBytesInput(const InferInput& input, const std::string& model_name) {
  int64_t n = 0;
  Status s = ForEachBytesElement(input.data, [&n](std::string_view) { ++n; });
  if (!s.ok()) {
    return InvalidArgument("input '" + ClientText(input.name) + "' for model '" +
                           ClientText(model_name) + "': " + s.message());
  }
  const std::optional<int64_t> expected = ElementCount(input.shape);
  if (!expected || *expected != n) {
    return InvalidArgument("expected " + std::to_string(expected.value_or(-1)) +
                           " string elements for inference input '" + ClientText(input.name) +
                           "' for model '" + ClientText(model_name) + "', got " +
                           std::to_string(n));
  }
  return Status::Ok();
}

// Shape of the raw input: batch 1 when batching, then the config dims with the one variable
// dimension deduced from `byte_size`.
StatusOr<Shape> DeduceRawShape(const RawInputSpec& spec, size_t byte_size) {
  Shape shape;
  if (spec.batching) shape.push_back(1);
  int64_t dynamic_axis = -1;
  int64_t known = 1;
  for (int64_t d : spec.dims) {
    if (d < 0) {
      if (dynamic_axis != -1) {
        return InvalidArgument("The shape of the raw input '" + spec.name +
                               "' can not be deduced because there are more than one "
                               "variable-sized dimension");
      }
      dynamic_axis = static_cast<int64_t>(shape.size());
    } else if (__builtin_mul_overflow(known, d, &known)) {
      return InvalidArgument("the shape of the raw input '" + spec.name + "' is too large");
    }
    shape.push_back(d);
  }
  if (spec.data_type == DataType::kBytes) {
    if (dynamic_axis != -1 || known != 1) {
      return InvalidArgument("For BYTE datatype raw input '" + spec.name +
                             "', the model must have input shape [1]");
    }
    return shape;
  }
  const size_t elem = DataTypeByteSize(spec.data_type);
  if (elem == 0) return InvalidArgument("invalid datatype for raw input '" + spec.name + "'");
  if (dynamic_axis != -1) {
    const uint64_t unit = static_cast<uint64_t>(known) * elem;
    shape[dynamic_axis] = unit == 0 ? 0 : static_cast<int64_t>(byte_size / unit);
  }
  auto expected = FixedByteSize(spec.data_type, shape, "raw input '" + spec.name + "'");
  if (!expected.ok()) return expected.status();
  if (*expected != byte_size) {
    return InvalidArgument("unexpected total byte size " + std::to_string(byte_size) +
                           " for input '" + spec.name + "', expecting " +
                           std::to_string(*expected));
  }
  return shape;
}

}  // namespace

StatusOr<size_t> ParseInferenceHeaderLength(std::string_view value, size_t body_size) {
  const std::string_view v = Trim(value);
  const std::string shown = ClientText(value);
  bool ok = !v.empty();
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9' || __builtin_mul_overflow(n, 10, &n) ||
        __builtin_add_overflow(n, static_cast<uint64_t>(c - '0'), &n)) {
      ok = false;
      break;
    }
  }
  if (!ok) {
    // A leading '-' is a negative length: report it as out of range, like Triton.
    if (!v.empty() && v.front() == '-') {
      return InvalidArgument("inference header size should be in range (0, " +
                             std::to_string(body_size) + "), got: " + shown);
    }
    return InvalidArgument("Unable to parse " + std::string(kInferHeaderContentLengthHeader) +
                           ", got: " + shown);
  }
  if (n > body_size) {
    return InvalidArgument("inference header size should be in range (0, " +
                           std::to_string(body_size) + "), got: " + shown);
  }
  return static_cast<size_t>(n);
}

Status AttachBinaryInputs(std::span<const char> tail, const std::string& model_name,
                          ParsedInferHeader* parsed) {
  size_t offset = 0;
  for (const PendingBinaryInput& p : parsed->binary_inputs) {
    InferInput& input = parsed->request->inputs[p.input_index];
    const size_t remaining = tail.size() - offset;
    if (p.byte_size > remaining) {
      return InvalidArgument("unexpected size for input '" + ClientText(input.name) +
                             "', expecting " + std::to_string(p.byte_size - remaining) +
                             " additional bytes for model '" + ClientText(model_name) + "'");
    }
    input.data = tail.subspan(offset, static_cast<size_t>(p.byte_size));
    offset += static_cast<size_t>(p.byte_size);
    if (input.data_type == DataType::kBytes) {
      NEREID_RETURN_IF_ERROR(CheckBytesInput(input, model_name));
    }
  }
  if (offset != tail.size()) {
    return InvalidArgument("unexpected additional input data for model '" + ClientText(model_name) +
                           "'");
  }
  return Status::Ok();
}

StatusOr<ParsedInferHeader> DecodeRawInferRequest(HttpRequestBody body, const RawInputSpec& spec) {
  if (spec.input_count != 1) {
    return InvalidArgument("Raw request must only have 1 input (found 1) to be deduced but got " +
                           std::to_string(spec.input_count) + " inputs in '" + spec.model_name +
                           "' model configuration");
  }
  NEREID_ASSIGN_OR_RETURN(Shape shape, DeduceRawShape(spec, body.size()));
  ParsedInferHeader out;
  out.request = std::make_unique<InferenceRequest>();
  out.binary_output_default = true;
  InferInput input;
  input.name = spec.name;
  input.data_type = spec.data_type;
  input.shape = std::move(shape);
  if (spec.data_type == DataType::kBytes) {
    // The body is one element; BYTES tensors carry a length prefix, so this one is copied.
    if (body.size() > std::numeric_limits<uint32_t>::max()) {
      return InvalidArgument("raw BYTES input is too large");
    }
    auto framed = std::make_shared<std::string>();
    framed->reserve(body.size() + 4);
    AppendBytesElement(body.view(), framed.get());
    input.data = std::span<const char>(framed->data(), framed->size());
    out.request->KeepAlive(std::move(framed));
  } else {
    input.data = std::span<const char>(body.data(), body.size());
    out.request->KeepAlive(body.owner());
  }
  out.request->inputs.push_back(std::move(input));
  return out;
}

}  // namespace nereid
