// The gRPC inference request codec: the input is a serialized inference.ModelInferRequest, as
// grpc++ hands it to the server, read into the arena the server reads it into (grpc_arena.h),
// decoded and validated against the fuzz models; the decoded request alone keeps the arena alive.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "frontends/grpc/grpc_arena.h"
#include "frontends/grpc/grpc_codec.h"
#include "fuzz_models.h"
#include "grpc_service.pb.h"

// protobuf logs every string field that is not UTF-8; the fuzzer produces millions of them.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::shared_ptr<inference::ModelInferRequest> message = nereid::NewModelInferRequest();
  if (!message->ParseFromArray(data, static_cast<int>(size))) return 0;
  (void)nereid::ParseModelVersion(message->model_version());
  auto decoded = nereid::DecodeModelInferRequest(std::move(message));
  if (decoded.ok()) nereid::fuzz::ValidateAgainstModels(**decoded);
  return 0;
}
