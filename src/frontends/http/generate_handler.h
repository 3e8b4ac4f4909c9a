// Triton's generate extension on the InferenceServer facade:
//   POST /v2/models/{m}[/versions/{v}]/generate          one JSON object (json_generate_codec.h)
//   POST /v2/models/{m}[/versions/{v}]/generate_stream   server-sent events, one per response
// for decoupled and non-decoupled models. Errors before inference answer {"error"} with the usual
// status (model lookup) or 400 (the body); afterwards, as in Triton, the first response fixes the
// status (200, or 400 when it is an error). /generate needs exactly one response (400 otherwise,
// where Triton answers 200 with the same error body: ADR 0002); /generate_stream writes each
// response as "data: <json>\n\n" as soon as it arrives, errors as "data: {"error":...}\n\n".
//
// Thread-safety: reentrant; the I/O thread never waits for the model. `server` must outlive the
// call. A stream whose connection is gone cancels its request.
#pragma once

#include <memory>

#include "frontends/http/handlers.h"
#include "frontends/http/http_types.h"
#include "frontends/http/router.h"

namespace nereid {

void HandleGenerate(InferenceServer* server, const HttpHandlerOptions& options,
                    HttpRequest& request, const RouteParams& params,
                    std::shared_ptr<HttpResponder> responder);

void HandleGenerateStream(InferenceServer* server, const HttpHandlerOptions& options,
                          HttpRequest& request, const RouteParams& params,
                          std::shared_ptr<HttpResponder> responder);

}  // namespace nereid
