// Triton's shared memory extension over HTTP (REFERENCE-2.md §11.1):
//   GET  /v2/systemsharedmemory[/region/{r}]/status       [{"name","key","offset","byte_size"}]
//   POST /v2/systemsharedmemory[/region/{r}]/register     body: shm_codec.h; empty 200
//   POST /v2/systemsharedmemory[/region/{r}]/unregister   no region: all; unknown names succeed
//   and the same under /v2/cudasharedmemory, answered as Triton's CPU-only build answers.
// Category `shared-memory` of --http-restricted-api. Register and unregister are refused (501)
// unless --allow-client-shm=true; status always answers.
//
// Thread-safety: as every handler (handlers.h).
#pragma once

#include <memory>

#include "frontends/http/handlers.h"
#include "frontends/http/http_types.h"
#include "frontends/http/router.h"

namespace nereid {

void HandleSystemShmStatus(InferenceServer* server, const HttpHandlerOptions& options,
                           HttpRequest& request, const RouteParams& params,
                           std::shared_ptr<HttpResponder> responder);
void HandleSystemShmRegister(InferenceServer* server, const HttpHandlerOptions& options,
                             HttpRequest& request, const RouteParams& params,
                             std::shared_ptr<HttpResponder> responder);
void HandleSystemShmUnregister(InferenceServer* server, const HttpHandlerOptions& options,
                               HttpRequest& request, const RouteParams& params,
                               std::shared_ptr<HttpResponder> responder);
void HandleCudaShmStatus(InferenceServer* server, const HttpHandlerOptions& options,
                         HttpRequest& request, const RouteParams& params,
                         std::shared_ptr<HttpResponder> responder);
void HandleCudaShmRegister(InferenceServer* server, const HttpHandlerOptions& options,
                           HttpRequest& request, const RouteParams& params,
                           std::shared_ptr<HttpResponder> responder);
void HandleCudaShmUnregister(InferenceServer* server, const HttpHandlerOptions& options,
                             HttpRequest& request, const RouteParams& params,
                             std::shared_ptr<HttpResponder> responder);

}  // namespace nereid
