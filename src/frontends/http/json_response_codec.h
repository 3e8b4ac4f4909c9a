// InferenceResponse -> Triton's HTTP inference response: a JSON header, followed, for outputs
// returned in binary, by their bytes in output order (binary tensor data extension, seed 001).
// Stateless functions; thread-safe.
#pragma once

#include <memory>

#include "core/request/inference_request.h"
#include "frontends/http/http_types.h"
#include "nereid/status.h"

namespace nereid {

// True when `output` is to be returned as binary data. As in Triton, an output the request lists
// is binary only when its own `binary_data` parameter is true; `binary_output_default` (the
// request's `binary_data_output`, or true for a raw binary request) applies to the others.
bool IsBinaryOutput(const InferenceResponse& response, const InferOutput& output,
                    bool binary_output_default);

// Builds the 200 response. The JSON is
//   {"id"?,"model_name","model_version":"<v>","parameters"?,"outputs":[...]}
// with each output either {"name","datatype","shape","data":[...]} or, when binary,
// {"name","datatype","shape","parameters":{"binary_data_size":N}}. Binary bytes are not copied:
// the body views InferOutput::data and keeps `response` alive until written. With binary bytes
// the response is application/octet-stream with Inference-Header-Content-Length set to the JSON
// length, otherwise application/json. Internal when an output's data does not match its shape.
StatusOr<HttpResponse> EncodeInferResponse(std::shared_ptr<const InferenceResponse> response,
                                           bool binary_output_default);
// Same, for a response owned alone: shared (one more allocation) only when a binary output's bytes
// must outlive the call; a JSON-only response is freed on return.
StatusOr<HttpResponse> EncodeInferResponse(std::unique_ptr<InferenceResponse>&& response,
                                           bool binary_output_default);

}  // namespace nereid
