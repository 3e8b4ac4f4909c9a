#include "frontends/http/log_settings_codec.h"

#include <rapidjson/document.h>

#include <algorithm>

#include "frontends/http/json_writer.h"
#include "frontends/http/settings_body.h"

namespace nereid {
namespace {

// TritonJson's type errors, which Triton answers with 500.
Status NotBool() { return Internal("attempt to access JSON non-boolean as boolean"); }

StatusOr<std::optional<bool>> OptionalBool(const rapidjson::Value& doc, const char* key) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd() || it->value.IsNull()) return std::optional<bool>();
  if (!it->value.IsBool()) return NotBool();
  return std::optional<bool>(it->value.GetBool());
}

}  // namespace

StatusOr<logging::SettingsUpdate> DecodeLogSettingsRequest(std::string_view body) {
  logging::SettingsUpdate update;
  rapidjson::Document doc;
  NEREID_ASSIGN_OR_RETURN(bool present, ParseSettingsBody(body, &doc));
  if (!present) return update;
  auto file = doc.FindMember("log_file");
  if (file != doc.MemberEnd() && !file->value.IsNull()) {
    return Unsupported("log file location can not be updated through network protocol");
  }
  NEREID_ASSIGN_OR_RETURN(update.info, OptionalBool(doc, "log_info"));
  NEREID_ASSIGN_OR_RETURN(update.warning, OptionalBool(doc, "log_warning"));
  NEREID_ASSIGN_OR_RETURN(update.error, OptionalBool(doc, "log_error"));
  auto verbose = doc.FindMember("log_verbose_level");
  if (verbose != doc.MemberEnd() && !verbose->value.IsNull()) {
    if (!verbose->value.IsUint64()) {
      return Internal("attempt to access JSON non-unsigned-integer as unsigned-integer");
    }
    update.verbose_level = static_cast<uint32_t>(
        std::min<uint64_t>(verbose->value.GetUint64(), logging::kMaxVerboseLevel));
  }
  auto format = doc.FindMember("log_format");
  if (format != doc.MemberEnd() && !format->value.IsNull()) {
    if (!format->value.IsString()) return Internal("attempt to access JSON non-string as string");
    const std::string name(format->value.GetString(), format->value.GetStringLength());
    update.format = logging::ParseFormat(name);
    if (!update.format) return Unavailable("invalid argument for --log_format, got: " + name);
  }
  return update;
}

std::string EncodeLogSettings(const logging::Settings& s) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartObject();
  w.Key("log_file");
  WriteJsonString(w, s.file);
  w.Key("log_info");
  w.Bool(s.info);
  w.Key("log_warning");
  w.Bool(s.warning);
  w.Key("log_error");
  w.Bool(s.error);
  w.Key("log_verbose_level");
  w.Uint(s.verbose_level);
  w.Key("log_format");
  w.String(logging::FormatName(s.format));
  w.EndObject();
  return out;
}

}  // namespace nereid
