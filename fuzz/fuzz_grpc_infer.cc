// The gRPC inference request codec: the input is a serialized inference.ModelInferRequest, as
// grpc++ hands it to the server, decoded and validated against the fuzz models.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "frontends/grpc/grpc_codec.h"
#include "fuzz_models.h"
#include "grpc_service.pb.h"

// protobuf logs every string field that is not UTF-8; the fuzzer produces millions of them.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto message = std::make_shared<inference::ModelInferRequest>();
  if (!message->ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)nereid::ParseModelVersion(message->model_version());
  auto decoded = nereid::DecodeModelInferRequest(message);
  if (decoded.ok()) nereid::fuzz::ValidateAgainstModels(**decoded);
  return 0;
}
