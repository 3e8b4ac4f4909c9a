#include "core/config/model_config_json.h"

#include <google/protobuf/util/json_util.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <charconv>
#include <cstdint>

namespace nereid::config {
namespace {

using rapidjson::Value;

// The member `name` of `obj` when `obj` is an object holding it, else nullptr.
Value* Member(Value* obj, const char* name) {
  if (obj == nullptr || !obj->IsObject()) return nullptr;
  auto it = obj->FindMember(name);
  return it == obj->MemberEnd() ? nullptr : &it->value;
}

template <typename T>
void StringToNumber(Value* v) {
  if (v == nullptr || !v->IsString()) return;
  const char* begin = v->GetString();
  const char* end = begin + v->GetStringLength();
  T parsed{};
  auto [ptr, ec] = std::from_chars(begin, end, parsed);
  if (ec != std::errc() || ptr != end) return;
  if constexpr (std::is_signed_v<T>) {
    v->SetInt64(parsed);
  } else {
    v->SetUint64(parsed);
  }
}

void FixInt(Value* obj, const char* name) { StringToNumber<int64_t>(Member(obj, name)); }
void FixUInt(Value* obj, const char* name) { StringToNumber<uint64_t>(Member(obj, name)); }

void FixIntArray(Value* obj, const char* name) {
  Value* arr = Member(obj, name);
  if (arr == nullptr || !arr->IsArray()) return;
  for (Value& v : arr->GetArray()) StringToNumber<int64_t>(&v);
}

// Calls `fn` for each element of the array member `name` of `obj`.
template <typename Fn>
void ForEachElement(Value* obj, const char* name, Fn fn) {
  Value* arr = Member(obj, name);
  if (arr == nullptr || !arr->IsArray()) return;
  for (Value& v : arr->GetArray()) fn(&v);
}

// Calls `fn` for each value of the object (map) member `name` of `obj`.
template <typename Fn>
void ForEachMapValue(Value* obj, const char* name, Fn fn) {
  Value* map = Member(obj, name);
  if (map == nullptr || !map->IsObject()) return;
  for (auto& m : map->GetObject()) fn(&m.value);
}

void FixDynamicBatching(Value* db) {
  FixUInt(db, "max_queue_delay_microseconds");
  FixUInt(db, "priority_levels");
  FixUInt(db, "default_priority_level");
  FixUInt(Member(db, "default_queue_policy"), "default_timeout_microseconds");
  ForEachMapValue(db, "priority_queue_policy",
                  [](Value* policy) { FixUInt(policy, "default_timeout_microseconds"); });
}

void FixSequenceBatching(Value* sb) {
  FixUInt(sb, "max_sequence_idle_microseconds");
  FixUInt(Member(sb, "oldest"), "max_queue_delay_microseconds");
  FixUInt(Member(sb, "direct"), "max_queue_delay_microseconds");
  ForEachElement(sb, "state", [](Value* state) {
    FixIntArray(state, "dims");
    ForEachElement(state, "initial_state", [](Value* init) { FixIntArray(init, "dims"); });
  });
}

void FixInt64Fields(Value* root) {
  for (const char* io : {"input", "output"}) {
    ForEachElement(root, io, [](Value* tensor) {
      FixIntArray(tensor, "dims");
      FixIntArray(Member(tensor, "reshape"), "shape");
    });
  }
  FixIntArray(Member(Member(root, "version_policy"), "specific"), "versions");
  FixDynamicBatching(Member(root, "dynamic_batching"));
  FixSequenceBatching(Member(root, "sequence_batching"));
  ForEachElement(Member(root, "ensemble_scheduling"), "step",
                 [](Value* step) { FixInt(step, "model_version"); });
  ForEachElement(root, "model_warmup", [](Value* warmup) {
    ForEachMapValue(warmup, "inputs", [](Value* input) { FixIntArray(input, "dims"); });
  });
}

}  // namespace

std::string ModelConfigToJson(const inference::ModelConfig& config) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.always_print_primitive_fields = true;
  std::string proto_json;
  // MessageToJsonString has no failure mode for ModelConfig (no Any, no well-known types).
  if (!google::protobuf::util::MessageToJsonString(config, &proto_json, options).ok()) {
    return "{}";
  }

  rapidjson::Document doc;
  doc.Parse<rapidjson::kParseFullPrecisionFlag>(proto_json.data(), proto_json.size());
  if (doc.HasParseError()) return proto_json;
  FixInt64Fields(&doc);

  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  doc.Accept(writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

StatusOr<inference::ModelConfig> ModelConfigFromJson(std::string_view json) {
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  options.case_insensitive_enum_parsing = true;
  inference::ModelConfig config;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &config, options);
  if (!status.ok()) {
    // Later lines repeat the input around the error with a caret; keep error messages one line.
    std::string_view message(status.message().data(), status.message().size());
    message = message.substr(0, message.find('\n'));
    return InvalidArgument("failed to parse model configuration JSON: " + std::string(message));
  }
  return config;
}

}  // namespace nereid::config
