// Triton's binary tensor data extension on the request side (seed 001): the
// Inference-Header-Content-Length header, the binary tail after the JSON header, and raw binary
// requests (header length 0, the body is the single input's bytes). Input views point into the
// request body, which the InferenceRequest keeps alive. Stateless functions; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/request/inference_request.h"
#include "core/tensor/shape.h"
#include "frontends/http/http_types.h"
#include "frontends/http/json_request_parser.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid {

inline constexpr std::string_view kInferHeaderContentLengthHeader =
    "Inference-Header-Content-Length";

// The header's value as a JSON header length in [0, body_size]. Not a decimal number, negative or
// larger than the body -> InvalidArgument.
StatusOr<size_t> ParseInferenceHeaderLength(std::string_view value, size_t body_size);

// Gives each pending binary input of `parsed` its slice of `tail` (the bytes after the JSON
// header), in input order. The slices must cover `tail` exactly; BYTES data must be well formed
// with one element per shape element.
Status AttachBinaryInputs(std::span<const char> tail, const std::string& model_name,
                          ParsedInferHeader* parsed);

// What a raw binary request needs to know about the model, taken from its configuration the way
// Triton deduces the single input.
struct RawInputSpec {
  std::string model_name;
  int input_count = 0;  // inputs in the model configuration
  std::string name;     // of the single input
  DataType data_type = DataType::kInvalid;
  Shape dims;             // configuration dims, without the batch dimension
  bool batching = false;  // max_batch_size > 0: the request is batch 1
};

// Builds the request of a raw binary body: one input named and typed from `spec`, its shape
// deduced from the byte size (at most one variable dimension; BYTES only for shape [1], the body
// being one element). Every output is to be returned in binary (binary_output_default).
StatusOr<ParsedInferHeader> DecodeRawInferRequest(HttpRequestBody body, const RawInputSpec& spec);

}  // namespace nereid
