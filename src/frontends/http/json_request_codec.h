// KServe v2 HTTP inference request -> InferenceRequest: the JSON header (streamed, no DOM) plus
// Triton's binary tensor data tail. Stateless functions; thread-safe.
//
// Ownership: the returned request keeps `body` alive; inputs sent as binary view into it without
// a copy, inputs sent as JSON `data` each own one converted buffer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/request/inference_request.h"
#include "frontends/http/http_types.h"
#include "nereid/status.h"

namespace nereid {

struct DecodedInferRequest {
  std::unique_ptr<InferenceRequest> request;
  // Outputs not asking otherwise come back binary: request parameter `binary_data_output`, or a
  // raw binary request. Per-output `binary_data` stays in RequestedOutput::parameters.
  bool binary_output_default = false;
};

// Decodes `body`, whose first `header_length` bytes are the JSON header and the rest the binary
// tensor data (header_length == body.size() when there is no Inference-Header-Content-Length).
// Sets model_name / model_version on the request. Malformed input -> InvalidArgument.
// Precondition: 0 < header_length <= body.size() (0 is a raw request: see
// DecodeRawInferRequest in binary_data_codec.h).
StatusOr<DecodedInferRequest> DecodeInferRequest(HttpRequestBody body, size_t header_length,
                                                 const std::string& model_name,
                                                 int64_t model_version);

}  // namespace nereid
