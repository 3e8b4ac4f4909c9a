#include "frontends/http/handlers.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "core/server/inference_server.h"
#include "frontends/http/generate_handler.h"
#include "frontends/http/http_server.h"
#include "frontends/http/infer_handler.h"
#include "frontends/http/log_settings_codec.h"
#include "frontends/http/metadata_codec.h"
#include "frontends/http/repository_handlers.h"
#include "frontends/http/shm_handlers.h"
#include "frontends/http/stats_codec.h"
#include "frontends/http/status_mapping.h"
#include "frontends/http/status_page.h"
#include "frontends/http/status_page_data.h"
#include "frontends/http/trace_settings_codec.h"

namespace nereid {
namespace {

using Responder = std::shared_ptr<HttpResponder>;
using Handler = void (*)(InferenceServer* server, const HttpHandlerOptions& options,
                         HttpRequest& request, const RouteParams& params, Responder responder);

void HandleServerMetadata(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                          const RouteParams&, Responder responder) {
  responder->Send(HttpResponse::Json(200, EncodeServerMetadata(server->Metadata())));
}

void HandleLive(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                const RouteParams&, Responder responder) {
  responder->Send(HttpResponse::Empty(server->IsLive() ? 200 : 400));
}

void HandleReady(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                 const RouteParams&, Responder responder) {
  responder->Send(HttpResponse::Empty(server->IsReady() ? 200 : 400));
}

void HandleModelMetadata(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                         const RouteParams& p, Responder responder) {
  StatusOr<ModelMetadata> metadata = server->GetModelMetadata(p.model, p.version);
  if (!metadata.ok()) return responder->Send(ErrorResponse(metadata.status()));
  responder->Send(HttpResponse::Json(200, EncodeModelMetadata(*metadata)));
}

void HandleModelReady(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                      const RouteParams& p, Responder responder) {
  StatusOr<bool> ready = server->ModelIsReady(p.model, p.version);
  if (!ready.ok()) return responder->Send(ErrorResponse(ready.status()));
  if (!*ready) return responder->Send(ErrorResponse(400, "Model version not ready"));
  responder->Send(HttpResponse::Empty(200));
}

void HandleModelConfig(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                       const RouteParams& p, Responder responder) {
  StatusOr<std::shared_ptr<const std::string>> json =
      server->GetModelConfigJson(p.model, p.version);
  if (!json.ok()) return responder->Send(ErrorResponse(json.status()));
  HttpResponse r = HttpResponse::Empty(200);
  r.headers.Add("Content-Type", "application/json");
  r.body.AppendView(**json);  // rendered once at load; shared, not copied
  r.body.KeepAlive(std::move(*json));
  responder->Send(std::move(r));
}

// Statistics extension; Triton answers every error of this endpoint with 400.
void HandleModelStats(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                      const RouteParams& p, Responder responder) {
  auto stats = server->GetModelStatistics(p.model, p.version);
  if (!stats.ok()) return responder->Send(ErrorResponse(400, stats.status().message()));
  responder->Send(HttpResponse::Json(200, EncodeModelStatistics(*stats)));
}

// Logging extension: POST applies the whole body or nothing; both methods answer every setting.
void HandleLogging(InferenceServer*, const HttpHandlerOptions&, HttpRequest& request,
                   const RouteParams&, Responder responder) {
  if (request.method == HttpMethod::kPost) {
    StatusOr<logging::SettingsUpdate> update = DecodeLogSettingsRequest(request.body.view());
    if (!update.ok()) return responder->Send(ErrorResponse(update.status()));
    logging::Apply(*update);
  }
  responder->Send(HttpResponse::Json(200, EncodeLogSettings(logging::CurrentSettings())));
}

// The status page (beyond Triton; docs/operations.md): HTML, never cached.
void HandleStatusPage(InferenceServer* server, const HttpHandlerOptions&, HttpRequest&,
                      const RouteParams&, Responder responder) {
  HttpResponse r = HttpResponse::Empty(200);
  r.headers.Add("Content-Type", "text/html; charset=utf-8");
  r.headers.Add("Cache-Control", "no-store");
  // Defence in depth behind the escaping: the page needs inline style and nothing else.
  r.headers.Add("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'");
  r.headers.Add("X-Content-Type-Options", "nosniff");
  r.body.Append(RenderStatusPage(CollectStatusPageData(*server)));
  responder->Send(std::move(r));
}

// Trace extension: a model must be ready; POST applies the whole body or nothing; both methods
// answer the (model's) setting.
void HandleTrace(InferenceServer* server, const HttpHandlerOptions&, HttpRequest& request,
                 const RouteParams& p, Responder responder) {
  if (!p.model.empty()) {
    StatusOr<bool> ready = server->ModelIsReady(p.model, -1);
    if (!ready.ok() || !*ready) {
      return responder->Send(
          ErrorResponse(InvalidArgument("Request for unknown model : " + p.model)));
    }
  }
  if (request.method == HttpMethod::kPost) {
    StatusOr<trace::TraceSettingsUpdate> update = DecodeTraceSettingsRequest(request.body.view());
    if (!update.ok()) return responder->Send(ErrorResponse(update.status()));
    if (Status s = server->tracer().Update(p.model, *update); !s.ok()) {
      return responder->Send(ErrorResponse(s));
    }
  }
  responder->Send(HttpResponse::Json(200, EncodeTraceSettings(server->tracer().Get(p.model))));
}

struct Route {
  unsigned methods;
  std::string_view pattern;
  Handler handler;
  RestrictedCategory category;
};

using C = RestrictedCategory;

// One line per endpoint; order matters only between overlapping patterns (first match wins).
constexpr Route kRoutes[] = {
    {kHttpPost, "/v2/models/{model}[/versions/{version}]/infer", &HandleInfer,  // hot path first
     C::kInference},
    {kHttpPost, "/v2/models/{model}[/versions/{version}]/generate", &HandleGenerate, C::kInference},
    {kHttpPost, "/v2/models/{model}[/versions/{version}]/generate_stream", &HandleGenerateStream,
     C::kInference},
    {kHttpGet, "/v2", &HandleServerMetadata, C::kMetadata},
    {kHttpGet, "/v2/health/live", &HandleLive, C::kHealth},
    {kHttpGet, "/v2/health/ready", &HandleReady, C::kHealth},
    // before {model}: "stats" is no model
    {kHttpGet, "/v2/models/stats", &HandleModelStats, C::kStatistics},
    {kHttpGet, "/v2/models/{model}[/versions/{version}]", &HandleModelMetadata, C::kMetadata},
    {kHttpGet, "/v2/models/{model}[/versions/{version}]/ready", &HandleModelReady, C::kHealth},
    {kHttpGet, "/v2/models/{model}[/versions/{version}]/config", &HandleModelConfig,
     C::kModelConfig},
    {kHttpPost, "/v2/repository[/{region}]/index", &HandleRepositoryIndex, C::kModelRepository},
    {kHttpPost, "/v2/repository[/{region}]/models/{model}/load", &HandleRepositoryLoad,
     C::kModelRepository},
    {kHttpPost, "/v2/repository[/{region}]/models/{model}/unload", &HandleRepositoryUnload,
     C::kModelRepository},
    {kHttpGet, "/v2/models/{model}[/versions/{version}]/stats", &HandleModelStats, C::kStatistics},
    {kHttpGet, "/v2/systemsharedmemory[/region/{region}]/status", &HandleSystemShmStatus,
     C::kSharedMemory},
    {kHttpPost, "/v2/systemsharedmemory[/region/{region}]/register", &HandleSystemShmRegister,
     C::kSharedMemory},
    {kHttpPost, "/v2/systemsharedmemory[/region/{region}]/unregister", &HandleSystemShmUnregister,
     C::kSharedMemory},
    {kHttpGet, "/v2/cudasharedmemory[/region/{region}]/status", &HandleCudaShmStatus,
     C::kSharedMemory},
    {kHttpPost, "/v2/cudasharedmemory[/region/{region}]/register", &HandleCudaShmRegister,
     C::kSharedMemory},
    {kHttpPost, "/v2/cudasharedmemory[/region/{region}]/unregister", &HandleCudaShmUnregister,
     C::kSharedMemory},
    {kHttpGet | kHttpPost, "/v2/logging", &HandleLogging, C::kLogging},
    {kHttpGet | kHttpPost, "/v2/trace/setting", &HandleTrace, C::kTrace},
    {kHttpGet | kHttpPost, "/v2/models/{model}/trace/setting", &HandleTrace, C::kTrace},
};

std::optional<Restriction> Copy(const Restriction* r) {
  return r ? std::optional<Restriction>(*r) : std::nullopt;
}

// Triton's RespondIfRestricted: the header's name in any case, its value exactly.
bool Refused(const std::optional<Restriction>& restriction, const HttpRequest& request,
             const Responder& responder) {
  if (!restriction) return false;
  const std::string* value = request.headers.Find(restriction->key);
  if (value != nullptr && *value == restriction->value) return false;
  responder->Send(
      ErrorResponse(403, "This API is restricted, expecting header '" + restriction->key + "'"));
  return true;
}

}  // namespace

Status RegisterTritonRoutes(InferenceServer* server, const HttpHandlerOptions& options,
                            HttpRouter* router) {
  if (options.status_page) {
    // The page shows what the statistics, model-repository and metadata endpoints do, so a
    // request must pass every one of those restrictions (docs/operations.md, "Status page").
    std::vector<std::optional<Restriction>> restrictions;
    for (C c : {C::kStatistics, C::kModelRepository, C::kMetadata}) {
      if (const Restriction* r = options.restricted.Get(c)) restrictions.push_back(*r);
    }
    NEREID_RETURN_IF_ERROR(
        router->Add(kHttpGet, "/",
                    [server, options, restrictions](HttpRequest& request, const RouteParams& p,
                                                    Responder responder) {
                      for (const std::optional<Restriction>& r : restrictions) {
                        if (Refused(r, request, responder)) return;
                      }
                      HandleStatusPage(server, options, request, p, std::move(responder));
                    }));
  }
  for (const Route& route : kRoutes) {
    NEREID_RETURN_IF_ERROR(
        router->Add(route.methods, route.pattern,
                    [server, options, handler = route.handler,
                     restriction = Copy(options.restricted.Get(route.category))](
                        HttpRequest& request, const RouteParams& p, Responder responder) {
                      if (Refused(restriction, request, responder)) return;
                      handler(server, options, request, p, std::move(responder));
                    }));
  }
  return Status::Ok();
}

StatusOr<std::unique_ptr<HttpServer>> StartTritonHttpServer(const HttpServerOptions& options,
                                                            InferenceServer* server) {
  auto router = std::make_shared<HttpRouter>();
  HttpHandlerOptions handler_options;
  handler_options.max_input_size = options.max_input_size;
  handler_options.restricted = options.restricted;
  handler_options.status_page = options.status_page;
  handler_options.inline_slots =
      std::make_shared<std::atomic<int>>(std::max(0, options.thread_count - 1));
  NEREID_RETURN_IF_ERROR(RegisterTritonRoutes(server, handler_options, router.get()));
  NEREID_ASSIGN_OR_RETURN(
      std::unique_ptr<HttpServer> http,
      HttpServer::Create(options, std::shared_ptr<const HttpRouter>(std::move(router))));
  NEREID_RETURN_IF_ERROR(http->Start());
  return http;
}

}  // namespace nereid
