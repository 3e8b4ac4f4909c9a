#include "frontends/http/json_request_codec.h"

#include <string_view>

#include "frontends/http/binary_data_codec.h"
#include "frontends/http/json_request_parser.h"

namespace nereid {

StatusOr<DecodedInferRequest> DecodeInferRequest(HttpRequestBody body, size_t header_length,
                                                 const std::string& model_name,
                                                 int64_t model_version) {
  if (header_length > body.size()) {
    return InvalidArgument("inference header size should be in range (0, " +
                           std::to_string(body.size()) +
                           "), got: " + std::to_string(header_length));
  }
  const std::string_view json(body.data(), header_length);
  NEREID_ASSIGN_OR_RETURN(ParsedInferHeader parsed, ParseInferRequestJson(json));
  const std::span<const char> tail(body.data() + header_length, body.size() - header_length);
  NEREID_RETURN_IF_ERROR(AttachBinaryInputs(tail, model_name, &parsed));
  if (!parsed.binary_inputs.empty()) parsed.request->KeepAlive(body.owner());
  parsed.request->model_name = model_name;
  parsed.request->model_version = model_version;
  return DecodedInferRequest{std::move(parsed.request), parsed.binary_output_default};
}

}  // namespace nereid
