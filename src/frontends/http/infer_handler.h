// POST /v2/models/{m}[/versions/{v}]/infer: decompress, decode (JSON + binary tail, or raw
// binary), InferenceServer::InferAsync, then encode (and compress) the reply on the connection's
// I/O thread. The I/O thread never waits for the model.
//
// Thread-safety: reentrant. `server` (the thread-safe facade) must outlive the call; the reply
// path holds only the responder, so a late reply after HttpServer::Stop is simply dropped.
#pragma once

#include <memory>

#include "frontends/http/handlers.h"
#include "frontends/http/http_types.h"
#include "frontends/http/router.h"

namespace nereid {

void HandleInfer(InferenceServer* server, const HttpHandlerOptions& options, HttpRequest& request,
                 const RouteParams& params, std::shared_ptr<HttpResponder> responder);

}  // namespace nereid
