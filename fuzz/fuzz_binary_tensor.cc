// Triton's binary tensor data extension: the input is "<Inference-Header-Content-Length>\n<body>".
// The first line is the header's value as a client sent it (parsed with
// ParseInferenceHeaderLength); a length inside the body splits it into the JSON header and the
// binary tail, and 0 makes the body a raw binary request for one of a few single-input specs.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "frontends/http/binary_data_codec.h"
#include "frontends/http/json_request_codec.h"
#include "fuzz_models.h"

namespace {

nereid::RawInputSpec Spec(size_t which) {
  nereid::RawInputSpec spec;
  spec.model_name = "raw";
  spec.input_count = 1;
  spec.name = "INPUT0";
  switch (which % 4) {
    case 0:
      spec.data_type = nereid::DataType::kFp32, spec.dims = {-1}, spec.batching = true;
      break;
    case 1:
      spec.data_type = nereid::DataType::kBytes, spec.dims = {1};
      break;
    case 2:
      spec.data_type = nereid::DataType::kInt16, spec.dims = {3, -1};
      break;
    default:
      spec.data_type = nereid::DataType::kUint8, spec.dims = {4}, spec.input_count = 2;
  }
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t newline = input.find('\n');
  if (newline == std::string_view::npos) return 0;
  auto body = std::make_shared<const std::string>(input.substr(newline + 1));
  auto length = nereid::ParseInferenceHeaderLength(input.substr(0, newline), body->size());
  if (!length.ok()) return 0;
  if (*length == 0) {
    auto raw = nereid::DecodeRawInferRequest(body, Spec(body->size()));
    if (raw.ok()) nereid::fuzz::ValidateAgainstModels(*raw->request);
    return 0;
  }
  auto decoded = nereid::DecodeInferRequest(body, *length, "simple", 1);
  if (decoded.ok()) nereid::fuzz::ValidateAgainstModels(*decoded->request);
  return 0;
}
