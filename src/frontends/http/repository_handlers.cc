#include "frontends/http/repository_handlers.h"

#include <rapidjson/document.h>

#include "common/error_text.h"
#include "core/server/inference_server.h"
#include "frontends/http/base64.h"
#include "frontends/http/json_writer.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

using Responder = std::shared_ptr<HttpResponder>;

// The body as a JSON object, or a null document for an empty body.
StatusOr<std::unique_ptr<rapidjson::Document>> ParseBody(const HttpRequest& request) {
  auto doc = std::make_unique<rapidjson::Document>();
  if (request.body->find_first_not_of(" \t\r\n") == std::string::npos) return doc;
  // Iterative parsing: no recursion however deep the document nests.
  doc->Parse<rapidjson::kParseIterativeFlag>(request.body->data(), request.body->size());
  if (doc->HasParseError()) {
    return InvalidArgument("failed to parse the request JSON buffer: offset " +
                           std::to_string(doc->GetErrorOffset()));
  }
  if (!doc->IsObject()) return InvalidArgument("the request body must be a JSON object");
  return doc;
}

const char* JsonTypeName(const rapidjson::Value& v) {
  if (v.IsString()) return "STRING";
  if (v.IsBool()) return "BOOL";
  if (v.IsInt64() || v.IsUint64()) return "INT";
  if (v.IsNumber()) return "DOUBLE";
  return "OBJECT";
}

// A repository name in the path (/v2/repository/{repository}/...) is not supported.
bool RejectNamedRepository(const RouteParams& p, const Responder& responder) {
  if (p.region.empty()) return false;
  responder->Send(ErrorResponse(Unsupported("'repository_name' specification is not supported")));
  return true;
}

StatusOr<ModelLoadParameters> LoadParameters(const rapidjson::Document& doc) {
  ModelLoadParameters out;
  if (!doc.IsObject() || !doc.HasMember("parameters")) return out;
  const rapidjson::Value& params = doc["parameters"];
  if (!params.IsObject()) return InvalidArgument("Unable to parse 'parameters'");
  for (auto it = params.MemberBegin(); it != params.MemberEnd(); ++it) {
    const std::string key(it->name.GetString(), it->name.GetStringLength());
    const rapidjson::Value& v = it->value;
    if (key == "config") {
      if (!v.IsString()) {
        return InvalidArgument(
            "Load parameter 'config' must be a string holding the JSON "
            "model configuration");
      }
      out.config_json = std::string(v.GetString(), v.GetStringLength());
    } else if (key.rfind("file:", 0) == 0) {
      if (!v.IsString()) {
        return InvalidArgument("Load parameter '" + ClientText(key) + "' must be a base64 string");
      }
      auto decoded = Base64Decode(std::string_view(v.GetString(), v.GetStringLength()));
      if (!decoded) {
        return InvalidArgument("Load parameter '" + ClientText(key) + "' is not valid base64");
      }
      out.files.emplace_back(key.substr(5), std::move(*decoded));
    } else {
      return InvalidArgument("Unrecognized load parameter '" + ClientText(key) + "' with type '" +
                             JsonTypeName(v) + "'");
    }
  }
  return out;
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
  auto doc = ParseBody(request);
  if (!doc.ok()) return responder->Send(ErrorResponse(doc.status()));
  bool ready = false;
  if ((*doc)->IsObject() && (*doc)->HasMember("ready")) {
    const rapidjson::Value& v = (**doc)["ready"];
    if (!v.IsBool()) return responder->Send(ErrorResponse(400, "Unable to parse 'ready'"));
    ready = v.GetBool();
  }
  responder->Send(HttpResponse::Json(200, EncodeIndex(server->RepositoryIndex(ready))));
}

void HandleRepositoryLoad(InferenceServer* server, const HttpHandlerOptions&, HttpRequest& request,
                          const RouteParams& p, Responder responder) {
  if (RejectNamedRepository(p, responder)) return;
  auto doc = ParseBody(request);
  if (!doc.ok()) return responder->Send(ErrorResponse(doc.status()));
  auto params = LoadParameters(**doc);
  if (!params.ok()) return responder->Send(ErrorResponse(params.status()));
  doc->reset();  // the decoded files are all that is kept
  server->LoadModelAsync(p.model, std::move(*params), [responder](Status s) {
    responder->Send(s.ok() ? HttpResponse::Empty(200) : ErrorResponse(s));
  });
}

void HandleRepositoryUnload(InferenceServer* server, const HttpHandlerOptions&,
                            HttpRequest& request, const RouteParams& p, Responder responder) {
  if (RejectNamedRepository(p, responder)) return;
  auto doc = ParseBody(request);
  if (!doc.ok()) return responder->Send(ErrorResponse(doc.status()));
  bool unload_dependents = false;
  if ((*doc)->IsObject() && (*doc)->HasMember("parameters")) {
    const rapidjson::Value& params = (**doc)["parameters"];
    if (!params.IsObject())
      return responder->Send(ErrorResponse(400, "Unable to parse 'parameters'"));
    for (auto it = params.MemberBegin(); it != params.MemberEnd(); ++it) {
      const std::string key(it->name.GetString(), it->name.GetStringLength());
      if (key != "unload_dependents") {
        return responder->Send(ErrorResponse(400, "Unrecognized unload parameter '" +
                                                      ClientText(key) + "' with type '" +
                                                      JsonTypeName(it->value) + "'"));
      }
      if (!it->value.IsBool()) {
        return responder->Send(ErrorResponse(400, "Unable to parse 'unload_dependents'"));
      }
      unload_dependents = it->value.GetBool();
    }
  }
  Status s = server->UnloadModel(p.model, unload_dependents);
  responder->Send(s.ok() ? HttpResponse::Empty(200) : ErrorResponse(s));
}

}  // namespace nereid
