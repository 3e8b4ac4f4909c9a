// Small RapidJSON helpers shared by the backend plugins' config reading and editing code.
// Stateless free functions; thread-safe for distinct documents.
//
// Values follow Triton's JSON rendering of inference.ModelConfig, where 64-bit integers may appear
// either as JSON numbers or as decimal strings (protobuf's JSON mapping), so both are accepted.
#pragma once

#include <rapidjson/document.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "nereid/status.h"

namespace nereid::backends {

// Parses `json`, which must be an object. The error names `what` (e.g. "model configuration").
Status ParseJsonObject(std::string_view json, std::string_view what, rapidjson::Document* doc);

// Serializes `value` compactly.
std::string WriteJson(const rapidjson::Value& value);

// Member `key` of object `obj`, or nullptr when `obj` is not an object or has no such member.
const rapidjson::Value* FindMember(const rapidjson::Value& obj, const char* key);

// The string member `key`, or "" when absent or not a string.
std::string_view StringMember(const rapidjson::Value& obj, const char* key);

// An integer from a JSON number or a decimal string; nullopt for anything else.
std::optional<int64_t> ReadInt(const rapidjson::Value& value);

// The integer member `key`: `fallback` when absent, an error when present but not an integer.
StatusOr<int64_t> IntMember(const rapidjson::Value& obj, const char* key, int64_t fallback);

// The integer array member `key` (e.g. "dims"): empty when absent, an error when malformed.
StatusOr<std::vector<int64_t>> IntArrayMember(const rapidjson::Value& obj, const char* key);

}  // namespace nereid::backends
