#include "frontends/http/repository_request_codec.h"

#include <rapidjson/document.h>

#include <memory>
#include <string>

#include "common/error_text.h"
#include "frontends/http/base64.h"
#include "frontends/http/settings_body.h"

namespace nereid {
namespace {

// The body as a JSON object, or a null document for an empty body.
StatusOr<std::unique_ptr<rapidjson::Document>> ParseBody(std::string_view body) {
  auto doc = std::make_unique<rapidjson::Document>();
  NEREID_RETURN_IF_ERROR(ParseSettingsBody(body, doc.get()).status());
  return doc;
}

const char* JsonTypeName(const rapidjson::Value& v) {
  if (v.IsString()) return "STRING";
  if (v.IsBool()) return "BOOL";
  if (v.IsInt64() || v.IsUint64()) return "INT";
  if (v.IsNumber()) return "DOUBLE";
  return "OBJECT";
}

std::string Key(const rapidjson::Value& name) {
  return std::string(name.GetString(), name.GetStringLength());
}

// The "parameters" object of `doc`, nullptr when absent.
StatusOr<const rapidjson::Value*> Parameters(const rapidjson::Document& doc) {
  if (!doc.IsObject() || !doc.HasMember("parameters")) return nullptr;
  const rapidjson::Value& params = doc["parameters"];
  if (!params.IsObject()) return InvalidArgument("Unable to parse 'parameters'");
  return &params;
}

}  // namespace

StatusOr<bool> DecodeRepositoryIndexRequest(std::string_view body) {
  NEREID_ASSIGN_OR_RETURN(auto doc, ParseBody(body));
  if (!doc->IsObject() || !doc->HasMember("ready")) return false;
  const rapidjson::Value& v = (*doc)["ready"];
  if (!v.IsBool()) return InvalidArgument("Invalid value for 'ready': expected a boolean");
  return v.GetBool();
}

StatusOr<ModelLoadParameters> DecodeModelLoadRequest(std::string_view body) {
  NEREID_ASSIGN_OR_RETURN(auto doc, ParseBody(body));
  NEREID_ASSIGN_OR_RETURN(const rapidjson::Value* params, Parameters(*doc));
  ModelLoadParameters out;
  if (params == nullptr) return out;
  for (auto it = params->MemberBegin(); it != params->MemberEnd(); ++it) {
    const std::string key = Key(it->name);
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

StatusOr<bool> DecodeModelUnloadRequest(std::string_view body) {
  NEREID_ASSIGN_OR_RETURN(auto doc, ParseBody(body));
  NEREID_ASSIGN_OR_RETURN(const rapidjson::Value* params, Parameters(*doc));
  bool unload_dependents = false;
  if (params == nullptr) return unload_dependents;
  for (auto it = params->MemberBegin(); it != params->MemberEnd(); ++it) {
    const std::string key = Key(it->name);
    if (key != "unload_dependents") {
      return InvalidArgument("Unrecognized unload parameter '" + ClientText(key) + "' with type '" +
                             JsonTypeName(it->value) + "'");
    }
    if (!it->value.IsBool()) return InvalidArgument("Unable to parse 'unload_dependents'");
    unload_dependents = it->value.GetBool();
  }
  return unload_dependents;
}

}  // namespace nereid
