#include "common/config_json.h"

#include <rapidjson/error/en.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>

namespace nereid::backends {

Status ParseJsonObject(std::string_view json, std::string_view what, rapidjson::Document* doc) {
  doc->Parse(json.data(), json.size());
  if (doc->HasParseError()) {
    return InvalidArgument("invalid " + std::string(what) +
                           " JSON: " + rapidjson::GetParseError_En(doc->GetParseError()) +
                           " at offset " + std::to_string(doc->GetErrorOffset()));
  }
  if (!doc->IsObject()) {
    return InvalidArgument("invalid " + std::string(what) + " JSON: not an object");
  }
  return Status::Ok();
}

std::string WriteJson(const rapidjson::Value& value) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  value.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

const rapidjson::Value* FindMember(const rapidjson::Value& obj, const char* key) {
  if (!obj.IsObject()) return nullptr;
  auto it = obj.FindMember(key);
  return it == obj.MemberEnd() ? nullptr : &it->value;
}

std::string_view StringMember(const rapidjson::Value& obj, const char* key) {
  const rapidjson::Value* v = FindMember(obj, key);
  if (v == nullptr || !v->IsString()) return {};
  return std::string_view(v->GetString(), v->GetStringLength());
}

std::optional<int64_t> ReadInt(const rapidjson::Value& value) {
  if (value.IsInt64()) return value.GetInt64();
  if (value.IsString()) {
    const char* begin = value.GetString();
    const char* end = begin + value.GetStringLength();
    int64_t out = 0;
    auto [ptr, ec] = std::from_chars(begin, end, out);
    if (ec == std::errc() && ptr == end && begin != end) return out;
  }
  return std::nullopt;
}

StatusOr<int64_t> IntMember(const rapidjson::Value& obj, const char* key, int64_t fallback) {
  const rapidjson::Value* v = FindMember(obj, key);
  if (v == nullptr) return fallback;
  std::optional<int64_t> out = ReadInt(*v);
  if (!out) return InvalidArgument(std::string("'") + key + "' must be an integer");
  return *out;
}

StatusOr<std::vector<int64_t>> IntArrayMember(const rapidjson::Value& obj, const char* key) {
  std::vector<int64_t> out;
  const rapidjson::Value* v = FindMember(obj, key);
  if (v == nullptr) return out;
  if (!v->IsArray()) return InvalidArgument(std::string("'") + key + "' must be an array");
  out.reserve(v->Size());
  for (const rapidjson::Value& item : v->GetArray()) {
    std::optional<int64_t> dim = ReadInt(item);
    if (!dim) return InvalidArgument(std::string("'") + key + "' must hold integers");
    out.push_back(*dim);
  }
  return out;
}

}  // namespace nereid::backends
