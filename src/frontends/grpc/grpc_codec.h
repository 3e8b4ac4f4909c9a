// gRPC KServe v2 messages <-> the protocol-neutral InferenceRequest / InferenceResponse.
// Stateless functions; thread-safe. Only what is gRPC-specific is checked here (raw/typed
// contents, datatype names, parameter values); names, types, shapes and byte sizes are validated
// by the core exactly as for HTTP.
//
// Ownership: a decoded request keeps the ModelInferRequest message alive (KeepAlive); inputs sent
// in `raw_input_contents` are views into it, inputs sent as typed `contents` each own one
// converted buffer. Encoding moves each output's bytes into the response message (no copy).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "core/request/inference_request.h"
#include "nereid/status.h"

namespace inference {
class InferParameter;
class ModelInferRequest;
class ModelInferResponse;
}  // namespace inference

namespace nereid {

// The one `triton_` request parameter a client may send (a bool): ModelStreamInfer then writes a
// decoupled model's flags-only FINAL as an empty response. It stays in the request's parameters.
inline constexpr std::string_view kEnableEmptyFinalResponse = "triton_enable_empty_final_response";
// The parameter every ModelStreamInfer response carries: whether it is its request's last.
inline constexpr std::string_view kFinalResponseParameter = "triton_final_response";

// "" -> -1 (the latest ready version); otherwise a non-negative decimal number.
StatusOr<int64_t> ParseModelVersion(const std::string& version);

// Builds the InferenceRequest of `message`. Malformed input -> InvalidArgument.
// Precondition: message != nullptr; it must not be modified while the request lives.
StatusOr<std::unique_ptr<InferenceRequest>> DecodeModelInferRequest(
    std::shared_ptr<const inference::ModelInferRequest> message);

// Fills `out` from `response`, moving each output's data into raw_output_contents in the same
// order as `outputs`. `response` is left with empty output data.
void EncodeModelInferResponse(InferenceResponse& response, inference::ModelInferResponse* out);

// InferParameter <-> ParameterValue (the oneof's five kinds). A parameter with no value set
// -> InvalidArgument naming `key`.
StatusOr<ParameterValue> ParameterFromProto(const std::string& key,
                                            const inference::InferParameter& p);
void ParameterToProto(const ParameterValue& value, inference::InferParameter* p);

}  // namespace nereid
