// Triton's KServe v2 HTTP endpoints bound to the InferenceServer facade:
//   GET  /v2                                          server metadata
//   GET  /v2/health/live | /v2/health/ready           200 or 400, empty body
//   GET  /v2/models/{m}[/versions/{v}]                model metadata
//   GET  /v2/models/{m}[/versions/{v}]/ready          200, or 400 {"error":"Model version not
//   ready"} GET  /v2/models/{m}[/versions/{v}]/config         the configuration JSON as rendered by
//   the core POST /v2/models/{m}[/versions/{v}]/infer          inference (infer_handler.h)
//   POST /v2/repository/...                           model repository (repository_handlers.h)
//   GET  /v2/models[/{m}[/versions/{v}]]/stats        statistics extension (stats_codec.h)
//   GET|POST /v2/{system,cuda}sharedmemory/...        shared memory extension (shm_handlers.h)
//   POST /v2/models/{m}[/versions/{v}]/generate[_stream]  generate extension (generate_handler.h)
//   GET  /                                            the status page (beyond Triton;
//   status_page.h)
// Other extension routes (trace) answer 404 until registered here, one line each.
//
// Thread-safety: handlers run concurrently on I/O threads; they only call the thread-safe
// facade. Lifetime: `server` must outlive the router and every HttpServer using it.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

#include "common/restricted_features.h"
#include "frontends/http/http_server.h"
#include "frontends/http/router.h"
#include "nereid/status.h"

namespace nereid {

class InferenceServer;

struct HttpHandlerOptions {
  size_t max_input_size = 64 * 1024 * 1024;  // applies to decompressed request bodies
  // How many I/O threads may run a model inline at once (shared by every handler copy). Kept at
  // thread_count - 1 so one thread always stays free for the other connections; null or 0
  // disables inline execution.
  std::shared_ptr<std::atomic<int>> inline_slots;
  // --http-restricted-api: a restricted endpoint answers 403 {"error":"This API is restricted,
  // expecting header '<key>'"} unless the request has header <key> (any case) equal to <value>.
  RestrictedFeatures restricted;
  // --allow-status-page: GET / serves the HTML status page (status_page.h); otherwise it answers
  // 404 as Triton does.
  bool status_page = true;
};

Status RegisterTritonRoutes(InferenceServer* server, const HttpHandlerOptions& options,
                            HttpRouter* router);

// The HTTP service of src/app/main.cc: an HttpServer serving Triton's routes bound to `server`,
// already started (the transport, http_server.h, knows nothing of the core). `server` must outlive
// the result; inference replies arriving after its Stop() are dropped. At most thread_count - 1
// I/O threads run a model inline at once.
StatusOr<std::unique_ptr<HttpServer>> StartTritonHttpServer(const HttpServerOptions& options,
                                                            InferenceServer* server);

}  // namespace nereid
