#include "frontends/http/trace_settings_codec.h"

#include <rapidjson/document.h>

#include <vector>

#include "frontends/http/json_writer.h"
#include "frontends/http/settings_body.h"

namespace nereid {
namespace {

Status NotString() { return Internal("attempt to access JSON non-string as string"); }

// The value of a string-valued key: nullopt when absent, an empty Change when null.
StatusOr<std::optional<std::optional<std::string>>> StringMember(const rapidjson::Value& doc,
                                                                 const char* key) {
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd()) return std::optional<std::optional<std::string>>();
  if (it->value.IsNull())
    return std::optional<std::optional<std::string>>(std::in_place, std::nullopt);
  if (!it->value.IsString()) return NotString();
  return std::optional<std::optional<std::string>>(
      std::string(it->value.GetString(), it->value.GetStringLength()));
}

template <typename T, typename Parse>
StatusOr<trace::Change<T>> Number(const rapidjson::Value& doc, const char* key, Parse parse) {
  NEREID_ASSIGN_OR_RETURN(auto text, StringMember(doc, key));
  if (!text) return trace::Change<T>();
  if (!*text) return trace::Change<T>(std::optional<T>());
  NEREID_ASSIGN_OR_RETURN(T value, parse(**text));
  return trace::Change<T>(value);
}

StatusOr<trace::Change<uint32_t>> Level(const rapidjson::Value& doc) {
  auto it = doc.FindMember("trace_level");
  if (it == doc.MemberEnd()) return trace::Change<uint32_t>();
  if (it->value.IsNull()) return trace::Change<uint32_t>(std::optional<uint32_t>());
  if (!it->value.IsArray()) return Internal("attempt to access JSON non-array as array");
  std::vector<std::string> names;
  for (const auto& v : it->value.GetArray()) {
    if (!v.IsString()) return NotString();
    names.emplace_back(v.GetString(), v.GetStringLength());
  }
  NEREID_ASSIGN_OR_RETURN(std::optional<uint32_t> level, trace::ParseLevels(names));
  if (!level) return trace::Change<uint32_t>();  // only unknown names: no change
  return trace::Change<uint32_t>(*level);
}

}  // namespace

StatusOr<trace::TraceSettingsUpdate> DecodeTraceSettingsRequest(std::string_view body) {
  trace::TraceSettingsUpdate update;
  rapidjson::Document doc;
  NEREID_ASSIGN_OR_RETURN(bool present, ParseSettingsBody(body, &doc));
  if (!present) return update;
  if (doc.HasMember("trace_file")) {
    return Unsupported("trace file location can not be updated through network protocol");
  }
  NEREID_ASSIGN_OR_RETURN(update.level, Level(doc));
  NEREID_ASSIGN_OR_RETURN(update.rate, Number<uint32_t>(doc, "trace_rate", [](const auto& s) {
                            return trace::ParseUnsigned("trace_rate", s);
                          }));
  NEREID_ASSIGN_OR_RETURN(update.count, Number<int32_t>(doc, "trace_count", [](const auto& s) {
                            return trace::ParseCount(s, /*grpc=*/false);
                          }));
  NEREID_ASSIGN_OR_RETURN(update.log_frequency,
                          Number<uint32_t>(doc, "log_frequency", [](const auto& s) {
                            return trace::ParseUnsigned("log_frequency", s);
                          }));
  return update;
}

std::string EncodeTraceSettings(const trace::TraceConfig& c) {
  std::string out;
  StringOutputStream stream(&out);
  JsonWriter w(stream);
  w.StartObject();
  w.Key("trace_level");
  w.StartArray();
  for (const std::string& name : trace::LevelNames(c.level)) w.String(name.c_str());
  w.EndArray();
  w.Key("trace_rate");
  WriteJsonString(w, std::to_string(c.rate));
  w.Key("trace_count");
  WriteJsonString(w, std::to_string(c.count));
  w.Key("log_frequency");
  WriteJsonString(w, std::to_string(c.log_frequency));
  w.Key("trace_file");
  WriteJsonString(w, c.file);
  w.Key("trace_mode");
  WriteJsonString(w, c.mode);
  w.EndObject();
  return out;
}

}  // namespace nereid
