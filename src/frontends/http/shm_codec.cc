#include "frontends/http/shm_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include "frontends/http/json_writer.h"

namespace nereid {

StatusOr<ShmRegisterRequest> DecodeShmRegisterRequest(std::string_view body) {
  rapidjson::Document doc;
  // Iterative parsing: no recursion however deep the document nests.
  doc.Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc.HasParseError()) {
    return InvalidArgument(std::string("failed to parse the request JSON buffer: ") +
                           rapidjson::GetParseError_En(doc.GetParseError()) + " at " +
                           std::to_string(doc.GetErrorOffset()));
  }
  ShmRegisterRequest out;
  auto member = [&doc](const char* name) -> const rapidjson::Value* {
    if (!doc.IsObject() || !doc.HasMember(name)) return nullptr;
    return &doc[name];
  };
  const rapidjson::Value* key = member("key");
  if (key == nullptr) return InvalidArgument("Shared memory register request has no 'key' field");
  if (!key->IsString()) return InvalidArgument("attempt to access JSON non-string as string");
  out.key.assign(key->GetString(), key->GetStringLength());
  auto as_uint = [](const rapidjson::Value& v, uint64_t* n) {
    if (!v.IsUint64()) {
      return InvalidArgument("attempt to access JSON non-unsigned-integer as unsigned-integer");
    }
    *n = v.GetUint64();
    return Status::Ok();
  };
  if (const rapidjson::Value* offset = member("offset")) {
    NEREID_RETURN_IF_ERROR(as_uint(*offset, &out.offset));
  }
  const rapidjson::Value* size = member("byte_size");
  if (size == nullptr) {
    return InvalidArgument("Shared memory register request has no 'byte_size' field");
  }
  NEREID_RETURN_IF_ERROR(as_uint(*size, &out.byte_size));
  return out;
}

namespace {

// Triton's status rows: system regions carry key and offset, CUDA ones a device_id.
std::string EncodeStatus(const std::vector<ShmRegionStatus>& regions, bool system) {
  std::string json;
  StringOutputStream stream(&json);
  JsonWriter w(stream);
  w.StartArray();
  for (const ShmRegionStatus& r : regions) {
    w.StartObject();
    WriteJsonKey(w, "name");
    WriteJsonString(w, r.name);
    if (system) {
      WriteJsonKey(w, "key");
      WriteJsonString(w, r.key);
      WriteJsonKey(w, "offset");
      w.Uint64(r.offset);
    } else {
      WriteJsonKey(w, "device_id");
      w.Uint64(0);
    }
    WriteJsonKey(w, "byte_size");
    w.Uint64(r.byte_size);
    w.EndObject();
  }
  w.EndArray();
  return json;
}

}  // namespace

std::string EncodeSystemShmStatus(const std::vector<ShmRegionStatus>& regions) {
  return EncodeStatus(regions, true);
}

std::string EncodeCudaShmStatus(const std::vector<ShmRegionStatus>& regions) {
  return EncodeStatus(regions, false);
}

}  // namespace nereid
