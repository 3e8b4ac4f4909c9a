// Triton's generate extension (server:src/http_server.cc, GenerateRequestClass): the JSON body of
// POST /v2/models/{m}[/versions/{v}]/generate[_stream] to an InferenceRequest, and each
// InferenceResponse back to one flat JSON object. Stateless functions; thread-safe.
//
// Request mapping, in the body's member order:
//   - a key naming a model input becomes that input: a scalar is one element, a (possibly nested)
//     array its elements in order; strings only for BYTES, booleans only for BOOL, numbers for the
//     numeric types. The shape is fitted to the input's metadata shape: every fixed dimension
//     must divide the element count, the innermost -1 takes what remains and other -1s become 1;
//   - "parameters" must be an object whose members are mapped by the same rules (an input named
//     there is an input too; errors are prefixed "Converting keyword: 'parameters': ");
//   - any other key becomes a request parameter: string, integer, boolean or other number.
// Response: {"id"?, "model_name", "model_version": "<v>", <parameter>..., <output>...} with keys
// in byte order (Triton builds it from a std::map; on a name clash the earlier kind wins); an
// output of one element is written as a scalar, any other as a flat array.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/request/inference_request.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid {

// One model input as the model metadata shows it (a leading -1 when the model batches).
struct GenerateInputSpec {
  std::string name;
  DataType data_type = DataType::kInvalid;
  std::vector<int64_t> shape;
};

// Decodes `body` (untrusted). Errors carry Triton's texts; the caller answers them with 400.
StatusOr<std::unique_ptr<InferenceRequest>> DecodeGenerateRequest(
    std::string_view body, std::span<const GenerateInputSpec> inputs, const std::string& model,
    int64_t version);

// Encodes one response. Internal when an output's data does not match its shape.
StatusOr<std::string> EncodeGenerateResponse(const InferenceResponse& response);

// One server-sent event: "data: <json>\n\n".
std::string SseEvent(std::string_view json);

}  // namespace nereid
