#include "frontends/http/repository_handlers.h"

#include "core/server/inference_server.h"
#include "frontends/http/json_writer.h"
#include "frontends/http/repository_request_codec.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

using Responder = std::shared_ptr<HttpResponder>;

// A repository name in the path (/v2/repository/{repository}/...) is not supported.
bool RejectNamedRepository(const RouteParams& p, const Responder& responder) {
  if (p.region.empty()) return false;
  responder->Send(ErrorResponse(Unsupported("'repository_name' specification is not supported")));
  return true;
}

std::string EncodeIndex(const std::vector<RepositoryIndexEntry>& index) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartArray();
  for (const RepositoryIndexEntry& e : index) {
    w.StartObject();
    WriteJsonKey(w, "name");
    WriteJsonString(w, e.name);
    if (e.version >= 0) {
      WriteJsonKey(w, "version");
      WriteJsonString(w, std::to_string(e.version));
    }
    if (!e.state.empty()) {
      WriteJsonKey(w, "state");
      WriteJsonString(w, e.state);
      WriteJsonKey(w, "reason");
      WriteJsonString(w, e.reason);
    }
    w.EndObject();
  }
  w.EndArray();
  return out;
}

}  // namespace

void HandleRepositoryIndex(InferenceServer* server, const HttpHandlerOptions&, HttpRequest& request,
                           const RouteParams& p, Responder responder) {
  if (RejectNamedRepository(p, responder)) return;
  auto ready = DecodeRepositoryIndexRequest(request.body.view());
  if (!ready.ok()) return responder->Send(ErrorResponse(ready.status()));
  responder->Send(HttpResponse::Json(200, EncodeIndex(server->RepositoryIndex(*ready))));
}

void HandleRepositoryLoad(InferenceServer* server, const HttpHandlerOptions&, HttpRequest& request,
                          const RouteParams& p, Responder responder) {
  if (RejectNamedRepository(p, responder)) return;
  auto params = DecodeModelLoadRequest(request.body.view());
  if (!params.ok()) return responder->Send(ErrorResponse(params.status()));
  server->LoadModelAsync(p.model, std::move(*params), [responder](Status s) {
    responder->Send(s.ok() ? HttpResponse::Empty(200) : ErrorResponse(s));
  });
}

void HandleRepositoryUnload(InferenceServer* server, const HttpHandlerOptions&,
                            HttpRequest& request, const RouteParams& p, Responder responder) {
  if (RejectNamedRepository(p, responder)) return;
  auto unload_dependents = DecodeModelUnloadRequest(request.body.view());
  if (!unload_dependents.ok()) return responder->Send(ErrorResponse(unload_dependents.status()));
  Status s = server->UnloadModel(p.model, *unload_dependents);
  responder->Send(s.ok() ? HttpResponse::Empty(200) : ErrorResponse(s));
}

}  // namespace nereid
