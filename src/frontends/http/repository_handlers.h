// Triton's model repository extension over HTTP (REFERENCE.md §1.2 rows 12-14):
//   POST /v2/repository/index                      body {"ready": bool} optional
//   POST /v2/repository/models/{m}/load            body {"parameters": {"config": "<json>",
//                                                        "file:<path>": "<base64>"}} optional
//   POST /v2/repository/models/{m}/unload          body {"parameters": {"unload_dependents": b}}
// and the same under /v2/repository/{repository}/..., which answers 501 as in Triton (named
// repositories are not supported). Load answers once the model is loaded or failed (on a load
// thread, never blocking an I/O thread); unload answers at once.
//
// Thread-safety: as every handler (handlers.h).
#pragma once

#include <memory>

#include "frontends/http/handlers.h"
#include "frontends/http/http_types.h"
#include "frontends/http/router.h"

namespace nereid {

void HandleRepositoryIndex(InferenceServer* server, const HttpHandlerOptions& options,
                           HttpRequest& request, const RouteParams& params,
                           std::shared_ptr<HttpResponder> responder);
void HandleRepositoryLoad(InferenceServer* server, const HttpHandlerOptions& options,
                          HttpRequest& request, const RouteParams& params,
                          std::shared_ptr<HttpResponder> responder);
void HandleRepositoryUnload(InferenceServer* server, const HttpHandlerOptions& options,
                            HttpRequest& request, const RouteParams& params,
                            std::shared_ptr<HttpResponder> responder);

}  // namespace nereid
