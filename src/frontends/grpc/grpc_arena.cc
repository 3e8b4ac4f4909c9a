#include "frontends/grpc/grpc_arena.h"

#include "grpc_service.pb.h"

namespace nereid {

std::shared_ptr<inference::ModelInferRequest> NewModelInferRequest() {
  auto holder =
      std::make_shared<ArenaMessage<inference::ModelInferRequest, kRequestArenaBlockBytes>>();
  inference::ModelInferRequest* message = holder->get();
  return std::shared_ptr<inference::ModelInferRequest>(std::move(holder), message);
}

}  // namespace nereid
