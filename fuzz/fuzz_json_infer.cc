// The KServe v2 JSON inference request codec: the whole input is a JSON request body (no binary
// tail), decoded as the HTTP handler decodes it and validated against the fuzz models.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "frontends/http/json_request_codec.h"
#include "fuzz_models.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;  // header_length 0 is a raw request: fuzz_binary_tensor's
  auto body = std::make_shared<const std::string>(reinterpret_cast<const char*>(data), size);
  auto decoded = nereid::DecodeInferRequest(body, body->size(), "simple", -1);
  if (decoded.ok()) nereid::fuzz::ValidateAgainstModels(*decoded->request);
  return 0;
}
