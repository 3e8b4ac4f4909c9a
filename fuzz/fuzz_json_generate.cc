// The generate extension's untrusted input: a `POST /v2/models/{m}/generate[_stream]` body
// (`DecodeGenerateRequest`) against input specs of every mapping kind (BYTES with a variable
// dimension, a fixed INT32 [1], BOOL, FP32 [-1,2] whose fixed dimension must divide the count,
// UINT8 with two variable dimensions). A decoded request must have inputs whose data size matches
// their fitted shape; every error must be INVALID_ARG or INTERNAL (the codes Triton's TritonJson
// and handler give), and a decoded request's one-element outputs must encode back.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "frontends/http/json_generate_codec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using nereid::DataType;
  using nereid::StatusCode;
  static const std::vector<nereid::GenerateInputSpec> specs = {{"TEXT", DataType::kBytes, {-1}},
                                                               {"COUNT", DataType::kInt32, {1}},
                                                               {"FLAG", DataType::kBool, {1}},
                                                               {"X", DataType::kFp32, {-1, 2}},
                                                               {"U", DataType::kUint8, {-1, -1}}};
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  auto request = nereid::DecodeGenerateRequest(body, specs, "m", -1);
  if (!request.ok()) {
    const StatusCode code = request.status().code();
    if (code != StatusCode::kInvalidArgument && code != StatusCode::kInternal) std::abort();
    return 0;
  }
  nereid::InferenceResponse response;
  response.model_name = "m";
  for (const nereid::InferInput& in : (*request)->inputs) {
    int64_t count = 1;
    for (int64_t d : in.shape) {
      if (d < 0) std::abort();
      count *= d;
    }
    const size_t width = nereid::DataTypeByteSize(in.data_type);
    if (width != 0 && in.data.size() != static_cast<size_t>(count) * width) std::abort();
    response.outputs.push_back(
        {in.name, in.data_type, in.shape, std::string(in.data.data(), in.data.size())});
  }
  for (const auto& [key, value] : (*request)->parameters) response.parameters.Set(key, value);
  if (!nereid::EncodeGenerateResponse(response).ok()) std::abort();
  return 0;
}
