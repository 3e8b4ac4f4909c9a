#include "python/stub_protocol.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>
#include <limits>

#include "common/config_json.h"

namespace nereid::backends::python {
namespace {

void PutLe(char* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint64_t GetLe(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

Status Bad(const std::string& what) {
  return Internal("malformed message from the Python stub: " + what);
}

StatusOr<TensorDesc> ParseTensor(const rapidjson::Value& v, uint64_t payload_size) {
  if (!v.IsObject()) return Bad("a tensor is not an object");
  TensorDesc t;
  const rapidjson::Value* name = FindMember(v, "name");
  if (name == nullptr || !name->IsString()) return Bad("a tensor has no name");
  t.name.assign(name->GetString(), name->GetStringLength());
  std::optional<DataType> dt = DataTypeFromWireName(StringMember(v, "datatype"));
  if (!dt || *dt == DataType::kInvalid) {
    return Bad("tensor '" + t.name + "' has an unknown datatype");
  }
  t.data_type = *dt;
  StatusOr<std::vector<int64_t>> shape = IntArrayMember(v, "shape");
  if (!shape.ok()) return Bad("tensor '" + t.name + "' has a malformed shape");
  t.shape = std::move(*shape);
  uint64_t elements = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return Bad("tensor '" + t.name + "' has a negative dimension");
    if (d != 0 && elements > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      return Bad("tensor '" + t.name + "' has too many elements");
    }
    elements *= static_cast<uint64_t>(d);
  }
  StatusOr<int64_t> offset = IntMember(v, "offset", -1);
  StatusOr<int64_t> size = IntMember(v, "size", -1);
  if (!offset.ok() || !size.ok() || *offset < 0 || *size < 0) {
    return Bad("tensor '" + t.name + "' has no valid offset and size");
  }
  t.offset = static_cast<uint64_t>(*offset);
  t.size = static_cast<uint64_t>(*size);
  if (t.offset > payload_size || t.size > payload_size - t.offset) {
    return Bad("tensor '" + t.name + "' lies outside the payload");
  }
  const size_t element_size = DataTypeByteSize(t.data_type);
  if (element_size != 0) {
    if (elements > std::numeric_limits<uint64_t>::max() / element_size ||
        elements * element_size != t.size) {
      return Bad("tensor '" + t.name + "' has " + std::to_string(t.size) +
                 " bytes, its shape needs " + std::to_string(elements * element_size));
    }
  }
  return t;
}

StatusOr<StubResponse> ParseResponse(const rapidjson::Value& v, uint64_t payload_size) {
  if (!v.IsObject()) return Bad("a response is not an object");
  StubResponse r;
  if (const rapidjson::Value* err = FindMember(v, "error"); err != nullptr && !err->IsNull()) {
    if (!err->IsObject()) return Bad("a response error is not an object");
    r.has_error = true;
    r.error.message = std::string(StringMember(*err, "message"));
    StatusOr<int64_t> code = IntMember(*err, "code", 1);
    r.error.code = code.ok() && *code >= 0 && *code <= 7 ? static_cast<int>(*code) : 1;
    return r;
  }
  if (const rapidjson::Value* outs = FindMember(v, "outputs"); outs != nullptr) {
    if (!outs->IsArray()) return Bad("'outputs' is not an array");
    for (const rapidjson::Value& o : outs->GetArray()) {
      NEREID_ASSIGN_OR_RETURN(TensorDesc t, ParseTensor(o, payload_size));
      r.outputs.push_back(std::move(t));
    }
  }
  return r;
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// A string of any length (rapidjson's String takes a length; string_view is not terminated).
void WriteString(JsonWriter* w, std::string_view s) {
  w->String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

// {"name","datatype","shape","offset","size"}: a tensor whose bytes are in the frame's payload.
void WriteTensorDesc(std::string_view name, DataType data_type, std::span<const int64_t> shape,
                     uint64_t offset, uint64_t size, JsonWriter* w) {
  auto str = [w](std::string_view s) { WriteString(w, s); };
  w->StartObject();
  str("name");
  str(name);
  str("datatype");
  str(DataTypeWireName(data_type));
  str("shape");
  w->StartArray();
  for (int64_t d : shape) w->Int64(d);
  w->EndArray();
  str("offset");
  w->Uint64(offset);
  str("size");
  w->Uint64(size);
  w->EndObject();
}

}  // namespace

std::array<char, kFrameHeaderSize> EncodeFrameHeader(FrameSizes sizes) {
  std::array<char, kFrameHeaderSize> out{};
  PutLe(out.data(), sizes.json_size, 4);
  PutLe(out.data() + 4, sizes.payload_size, 8);
  return out;
}

StatusOr<FrameSizes> DecodeFrameHeader(std::span<const char, kFrameHeaderSize> bytes) {
  FrameSizes sizes;
  sizes.json_size = static_cast<uint32_t>(GetLe(bytes.data(), 4));
  sizes.payload_size = GetLe(bytes.data() + 4, 8);
  if (sizes.json_size > kMaxFrameJsonSize) return Bad("header too large");
  return sizes;
}

StatusOr<StubMessage> ParseStubMessage(std::string_view json, uint64_t payload_size) {
  rapidjson::Document doc;
  if (Status s = ParseJsonObject(json, "Python stub message", &doc); !s.ok()) {
    return Bad(s.message());
  }
  StubMessage m;
  m.op = std::string(StringMember(doc, "op"));
  m.message = std::string(StringMember(doc, "message"));
  m.config = std::string(StringMember(doc, "config"));
  if (const rapidjson::Value* e = FindMember(doc, "exception"); e != nullptr && e->IsBool()) {
    m.exception = e->GetBool();
  }
  StatusOr<int64_t> level = IntMember(doc, "level", 0);
  StatusOr<int64_t> request = IntMember(doc, "request", 0);
  StatusOr<int64_t> flags = IntMember(doc, "flags", 0);
  StatusOr<int64_t> tag = IntMember(doc, "tag", 0);
  if (!level.ok() || !request.ok() || !flags.ok() || !tag.ok() || *flags < 0 ||
      *flags > 0xffffffff) {
    return Bad("malformed 'level', 'request', 'flags' or 'tag'");
  }
  m.tag = *tag;
  m.level = static_cast<int>(*level);
  m.request = *request;
  m.flags = static_cast<uint32_t>(*flags);
  if (m.op == "result") {
    const rapidjson::Value* rs = FindMember(doc, "responses");
    if (rs == nullptr || !rs->IsArray()) return Bad("'responses' is not an array");
    for (const rapidjson::Value& r : rs->GetArray()) {
      NEREID_ASSIGN_OR_RETURN(StubResponse resp, ParseResponse(r, payload_size));
      m.responses.push_back(std::move(resp));
    }
  } else if (m.op == "send") {
    NEREID_ASSIGN_OR_RETURN(m.response, ParseResponse(doc, payload_size));
  } else if (m.op == "bls") {
    m.model_name = std::string(StringMember(doc, "model_name"));
    m.request_id = std::string(StringMember(doc, "request_id"));
    StatusOr<int64_t> version = IntMember(doc, "model_version", -1);
    if (!version.ok()) return Bad("malformed 'model_version'");
    m.model_version = *version;
    StatusOr<int64_t> timeout = IntMember(doc, "timeout", 0);
    if (!timeout.ok() || *timeout < 0) return Bad("malformed 'timeout'");
    m.timeout_us = static_cast<uint64_t>(*timeout);
    if (const rapidjson::Value* req = FindMember(doc, "requested"); req != nullptr) {
      if (!req->IsArray()) return Bad("'requested' is not an array");
      for (const rapidjson::Value& r : req->GetArray()) {
        if (!r.IsString()) return Bad("a requested output is not a string");
        m.requested_outputs.emplace_back(r.GetString(), r.GetStringLength());
      }
    }
    if (const rapidjson::Value* c = FindMember(doc, "correlation_id"); c != nullptr) {
      if (c->IsString()) {
        m.correlation_id_str.assign(c->GetString(), c->GetStringLength());
      } else if (c->IsUint64()) {
        m.correlation_id = c->GetUint64();
      } else {
        return Bad("malformed 'correlation_id'");
      }
    }
    if (const rapidjson::Value* d = FindMember(doc, "decoupled"); d != nullptr && d->IsBool()) {
      m.decoupled = d->GetBool();
    }
    if (const rapidjson::Value* ps = FindMember(doc, "parameters"); ps != nullptr) {
      if (!ps->IsObject()) return Bad("'parameters' is not an object");
      for (const auto& p : ps->GetObject()) {
        std::string key(p.name.GetString(), p.name.GetStringLength());
        if (p.value.IsBool()) {
          m.parameters.emplace_back(std::move(key), p.value.GetBool());
        } else if (p.value.IsInt64()) {
          m.parameters.emplace_back(std::move(key), p.value.GetInt64());
        } else if (p.value.IsString()) {
          m.parameters.emplace_back(std::move(key),
                                    std::string(p.value.GetString(), p.value.GetStringLength()));
        } else {
          return Bad("parameter '" + key + "' is not a string, an integer or a bool");
        }
      }
    }
    const rapidjson::Value* ins = FindMember(doc, "inputs");
    if (ins == nullptr || !ins->IsArray()) return Bad("'inputs' is not an array");
    for (const rapidjson::Value& i : ins->GetArray()) {
      NEREID_ASSIGN_OR_RETURN(TensorDesc t, ParseTensor(i, payload_size));
      m.inputs.push_back(std::move(t));
    }
  } else if (m.op == "model_ready" || m.op == "load_model" || m.op == "unload_model") {
    m.model_name = std::string(StringMember(doc, "model_name"));
    StatusOr<int64_t> version = IntMember(doc, "model_version", -1);
    if (!version.ok()) return Bad("malformed 'model_version'");
    m.model_version = *version;
    if (const rapidjson::Value* u = FindMember(doc, "unload_dependents");
        u != nullptr && u->IsBool()) {
      m.unload_dependents = u->GetBool();
    }
    if (const rapidjson::Value* fs = FindMember(doc, "files"); fs != nullptr) {
      if (!fs->IsArray()) return Bad("'files' is not an array");
      for (const rapidjson::Value& f : fs->GetArray()) {
        // A file is described as a BYTES-free tensor: name (its path), offset and size.
        if (!f.IsObject()) return Bad("a file is not an object");
        StatusOr<int64_t> offset = IntMember(f, "offset", -1);
        StatusOr<int64_t> size = IntMember(f, "size", -1);
        if (!offset.ok() || !size.ok() || *offset < 0 || *size < 0 ||
            static_cast<uint64_t>(*offset) > payload_size ||
            static_cast<uint64_t>(*size) > payload_size - static_cast<uint64_t>(*offset)) {
          return Bad("a file has no valid offset and size");
        }
        TensorDesc t;
        t.data_type = DataType::kUint8;
        t.offset = static_cast<uint64_t>(*offset);
        t.size = static_cast<uint64_t>(*size);
        t.shape = {*size};
        m.files.emplace_back(std::string(StringMember(f, "path")), std::move(t));
      }
    }
  } else if (m.op != "ok" && m.op != "error" && m.op != "log" && m.op != "done" &&
             m.op != "config" && m.op != "is_cancelled" && m.op != "metric") {
    return Bad("unknown op '" + m.op + "'");
  }
  return m;
}

StatusCode StubErrorCode(int code) {
  switch (code) {
    case 0:
      return StatusCode::kUnknown;
    case 2:
      return StatusCode::kNotFound;
    case 3:
      return StatusCode::kInvalidArgument;
    case 4:
      return StatusCode::kUnavailable;
    case 5:
      return StatusCode::kUnsupported;
    case 6:
      return StatusCode::kAlreadyExists;
    case 7:
      return StatusCode::kCancelled;
    default:
      return StatusCode::kInternal;
  }
}

int TritonErrorCodeOf(StatusCode code) {
  switch (code) {
    case StatusCode::kUnknown:
      return 0;
    case StatusCode::kNotFound:
      return 2;
    case StatusCode::kInvalidArgument:
      return 3;
    case StatusCode::kUnavailable:
      return 4;
    case StatusCode::kUnsupported:
      return 5;
    case StatusCode::kAlreadyExists:
      return 6;
    case StatusCode::kCancelled:
      return 7;
    default:
      return 1;
  }
}

std::string EncodeCancelled(int64_t tag, bool cancelled) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  w.StartObject();
  w.Key("op");
  w.String("cancelled");
  w.Key("tag");
  w.Int64(tag);
  w.Key("cancelled");
  w.Bool(cancelled);
  w.EndObject();
  return buf.GetString();
}

std::string EncodeControlAnswer(int64_t tag, const Status& error, bool ready) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  auto str = [&w](std::string_view s) { WriteString(&w, s); };
  w.StartObject();
  str("op");
  str("control_result");
  str("tag");
  w.Int64(tag);
  if (!error.ok()) {
    str("error");
    str(error.message());
  }
  str("ready");
  w.Bool(ready);
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::string EncodeBlsResult(int64_t tag, const Status& error,
                            std::span<const backend::InferTensor> outputs) {
  return EncodeBlsStreamResult(tag, error, outputs, true);
}

std::string EncodeBlsStreamResult(int64_t tag, const Status& error,
                                  std::span<const backend::InferTensor> outputs, bool final) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  auto str = [&w](std::string_view s) { WriteString(&w, s); };
  w.StartObject();
  str("op");
  str("bls_result");
  str("tag");
  w.Int64(tag);
  str("final");
  w.Bool(final);
  if (!error.ok()) {
    str("error");
    w.StartObject();
    str("message");
    str(error.message());
    str("code");
    w.Int(TritonErrorCodeOf(error.code()));
    w.EndObject();
  } else {
    str("outputs");
    w.StartArray();
    uint64_t offset = 0;
    for (const backend::InferTensor& t : outputs) {
      WriteTensorDesc(t.name, t.data_type, t.shape, offset, t.data.size(), &w);
      offset += t.data.size();
    }
    w.EndArray();
  }
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

std::string EncodeExecute(std::string_view instance_name, std::string_view model_name,
                          std::span<const RequestHeader> requests, int64_t first_request) {
  rapidjson::StringBuffer buf;
  JsonWriter w(buf);
  auto str = [&w](std::string_view s) { WriteString(&w, s); };
  w.StartObject();
  str("op");
  str("execute");
  str("instance");
  str(instance_name);
  str("model_name");
  str(model_name);
  str("first_request");
  w.Int64(first_request);
  str("requests");
  w.StartArray();
  uint64_t offset = 0;
  for (const RequestHeader& r : requests) {
    w.StartObject();
    str("id");
    str(r.id);
    str("correlation_id");
    if (r.correlation_id_str.empty()) {
      w.Uint64(r.correlation_id);
    } else {
      str(r.correlation_id_str);
    }
    str("flags");
    w.Uint(r.flags);
    str("parameters");
    str(r.parameters_json);
    str("requested");
    w.StartArray();
    for (const std::string& o : r.requested_outputs) str(o);
    w.EndArray();
    str("inputs");
    w.StartArray();
    for (const backend::TensorRef& t : r.inputs) {
      WriteTensorDesc(t.name, t.data_type, t.shape, offset, t.data.size(), &w);
      offset += t.data.size();
    }
    w.EndArray();
    w.EndObject();
  }
  w.EndArray();
  w.EndObject();
  return std::string(buf.GetString(), buf.GetSize());
}

}  // namespace nereid::backends::python
