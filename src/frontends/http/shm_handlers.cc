#include "frontends/http/shm_handlers.h"

#include "core/server/inference_server.h"
#include "core/shm/shared_memory_manager.h"
#include "frontends/http/shm_codec.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

using Responder = std::shared_ptr<HttpResponder>;

void Reply(const Status& s, const Responder& responder) {
  responder->Send(s.ok() ? HttpResponse::Empty(200) : ErrorResponse(s));
}

void ReplyStatus(const StatusOr<std::vector<ShmRegionStatus>>& rows,
                 std::string (*encode)(const std::vector<ShmRegionStatus>&),
                 const Responder& responder) {
  if (!rows.ok()) return responder->Send(ErrorResponse(rows.status()));
  responder->Send(HttpResponse::Json(200, encode(*rows)));
}

// Triton's checks before a register body is read: the switch, then a region name.
Status CheckRegister(const SharedMemoryManager& shm, const RouteParams& p, const char* kind) {
  if (!shm.client_shm_allowed()) return Unsupported(kClientShmDisabled);
  if (p.region.empty()) {
    return InvalidArgument(std::string("'region name' is necessary to register ") + kind +
                           " shared memory region");
  }
  return Status::Ok();
}

}  // namespace

void HandleSystemShmStatus(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                           const RouteParams& p, Responder responder) {
  ReplyStatus(server->shared_memory().SystemStatus(p.region), &EncodeSystemShmStatus, responder);
}

void HandleSystemShmRegister(InferenceServer* server, const HttpHandlerOptions&,
                             HttpRequest& request, const RouteParams& p, Responder responder) {
  SharedMemoryManager& shm = server->shared_memory();
  if (Status s = CheckRegister(shm, p, "system"); !s.ok()) return Reply(s, responder);
  StatusOr<ShmRegisterRequest> body = DecodeShmRegisterRequest(request.body.view());
  if (!body.ok()) return Reply(body.status(), responder);
  Reply(shm.RegisterSystem(p.region, body->key, body->offset, body->byte_size), responder);
}

void HandleSystemShmUnregister(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                               const RouteParams& p, Responder responder) {
  Reply(server->shared_memory().UnregisterSystem(p.region), responder);
}

void HandleCudaShmStatus(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                         const RouteParams& p, Responder responder) {
  ReplyStatus(server->shared_memory().CudaStatus(p.region), &EncodeCudaShmStatus, responder);
}

void HandleCudaShmRegister(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                           const RouteParams& p, Responder responder) {
  SharedMemoryManager& shm = server->shared_memory();
  if (Status s = CheckRegister(shm, p, "cuda"); !s.ok()) return Reply(s, responder);
  Reply(shm.RegisterCuda(p.region), responder);
}

void HandleCudaShmUnregister(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                             const RouteParams& p, Responder responder) {
  Reply(server->shared_memory().UnregisterCuda(p.region), responder);
}

}  // namespace nereid
