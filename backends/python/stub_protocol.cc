#include "python/stub_protocol.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstring>
#include <limits>

#include "common/config_json.h"
#include "python/binary_codec.h"
#include "python/bls_frames.h"

namespace nereid::backends::python {
namespace {

Status Bad(const std::string& what) { return MalformedStubMessage(what); }

}  // namespace

Status MalformedStubMessage(const std::string& what) {
  return Internal("malformed message from the Python stub: " + what);
}

Status CheckTensorDesc(const TensorDesc& t, uint64_t payload_size) {
  uint64_t elements = 1;
  for (int64_t d : t.shape) {
    if (d < 0) return Bad("tensor '" + t.name + "' has a negative dimension");
    if (d != 0 && elements > std::numeric_limits<uint64_t>::max() / static_cast<uint64_t>(d)) {
      return Bad("tensor '" + t.name + "' has too many elements");
    }
    elements *= static_cast<uint64_t>(d);
  }
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
  return Status::Ok();
}

StatusOr<TensorDesc> ParsePlacedTensor(BinaryReader* in, uint64_t payload_size,
                                       uint64_t pool_size) {
  uint64_t name_size = 0, data_type = 0, dims = 0, place = 0, offset = 0, size = 0;
  TensorDesc t;
  if (!in->Le(2, &name_size) || !in->Le(1, &data_type) || !in->Le(1, &dims) || !in->Le(1, &place) ||
      !in->Le(8, &offset) || !in->Le(8, &size) || !in->Bytes(name_size, &t.name)) {
    return Bad("a tensor is cut short");
  }
  if (data_type == 0 || data_type > static_cast<uint64_t>(DataType::kBf16)) {
    return Bad("tensor '" + t.name + "' has an unknown datatype");
  }
  if (place > 1) return Bad("tensor '" + t.name + "' has an unknown place");
  t.data_type = static_cast<DataType>(data_type);
  t.shape.resize(dims);
  for (int64_t& d : t.shape) {
    uint64_t v = 0;
    if (!in->Le(8, &v)) return Bad("tensor '" + t.name + "' is cut short");
    d = static_cast<int64_t>(v);
  }
  t.offset = offset;
  t.size = size;
  t.in_pool = place == 1;
  if (t.in_pool && (offset > pool_size || size > pool_size - offset)) {
    return Bad("tensor '" + t.name + "' lies outside the shared-memory pool");
  }
  NEREID_RETURN_IF_ERROR(CheckTensorDesc(t, t.in_pool ? pool_size : payload_size));
  return t;
}

namespace {

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
  StatusOr<int64_t> offset = IntMember(v, "offset", -1);
  StatusOr<int64_t> size = IntMember(v, "size", -1);
  if (!offset.ok() || !size.ok() || *offset < 0 || *size < 0) {
    return Bad("tensor '" + t.name + "' has no valid offset and size");
  }
  t.offset = static_cast<uint64_t>(*offset);
  t.size = static_cast<uint64_t>(*size);
  NEREID_RETURN_IF_ERROR(CheckTensorDesc(t, payload_size));
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

// One response of a binary "result" or "send"; its outputs' bytes start at `*offset`.
StatusOr<StubResponse> ParseBinaryResponse(BinaryReader* in, uint64_t payload_size,
                                           uint64_t pool_size, uint64_t* offset) {
  uint64_t has_error = 0, code = 0, count = 0, message_size = 0;
  if (!in->Le(1, &has_error) || !in->Le(1, &code) || !in->Le(2, &count) ||
      !in->Le(4, &message_size)) {
    return Bad("a response is cut short");
  }
  StubResponse r;
  if (!in->Bytes(message_size, &r.error.message)) return Bad("a response is cut short");
  if (has_error != 0) {
    r.has_error = true;
    r.error.code = code <= 7 ? static_cast<int>(code) : 1;
    if (count != 0) return Bad("a response has both an error and outputs");
    return r;
  }
  r.outputs.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    NEREID_ASSIGN_OR_RETURN(TensorDesc t, ParsePlacedTensor(in, payload_size, pool_size));
    if (!t.in_pool) {  // the payload's tensors follow each other (the server reads them in order)
      if (t.offset != *offset) return Bad("tensor '" + t.name + "' is out of order");
      *offset += t.size;
    }
    r.outputs.push_back(std::move(t));
  }
  return r;
}

StatusOr<StubMessage> ParseBinaryMessage(std::string_view bytes, uint64_t payload_size,
                                         uint64_t pool_size) {
  BinaryReader in(bytes);
  uint64_t kind = 0, pad = 0;
  if (!in.Le(1, &kind) || !in.Le(3, &pad)) return Bad("a binary header is cut short");
  StubMessage m;
  uint64_t offset = 0;
  if (kind == static_cast<uint64_t>(kBinaryResult)) {
    uint64_t count = 0;
    if (!in.Le(4, &count)) return Bad("a binary header is cut short");
    m.op = "result";
    for (uint64_t i = 0; i < count; ++i) {
      NEREID_ASSIGN_OR_RETURN(StubResponse r,
                              ParseBinaryResponse(&in, payload_size, pool_size, &offset));
      m.responses.push_back(std::move(r));
    }
  } else {  // kBinarySend
    uint64_t flags = 0, request = 0;
    if (!in.Le(4, &flags) || !in.Le(8, &request)) return Bad("a binary header is cut short");
    m.op = "send";
    m.flags = static_cast<uint32_t>(flags);
    m.request = static_cast<int64_t>(request);
    NEREID_ASSIGN_OR_RETURN(m.response, ParseBinaryResponse(&in, payload_size, pool_size, &offset));
  }
  if (!in.AtEnd()) return Bad("a binary header has trailing bytes");
  return m;
}

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

// A string of any length (rapidjson's String takes a length; string_view is not terminated).
void WriteString(JsonWriter* w, std::string_view s) {
  w->String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
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

StatusOr<StubMessage> ParseStubMessage(std::string_view json, uint64_t payload_size,
                                       uint64_t pool_size) {
  if (!json.empty() && (json[0] == kBinaryResult || json[0] == kBinarySend)) {
    return ParseBinaryMessage(json, payload_size, pool_size);
  }
  if (!json.empty() && (json[0] == kBinaryBls || json[0] == kBinaryBlsNext)) {
    return ParseBlsFrame(json, payload_size, pool_size);
  }
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
  if (const rapidjson::Value* r = FindMember(doc, "is_ready"); r != nullptr && r->IsBool()) {
    m.has_is_ready = r->GetBool();
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
             m.op != "config" && m.op != "is_cancelled" && m.op != "metric" && m.op != "ready" &&
             m.op != "bls_cancel" && m.op != "release") {
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

Status EncodeExecute(std::span<const RequestHeader> requests, int64_t first_request,
                     std::string* out) {
  constexpr uint64_t kU16 = 0xffff, kU32 = 0xffffffff;
  out->clear();
  out->push_back(kBinaryExecute);
  out->append(kExecuteShmSlot - 1 + 24, '\0');  // the pool block: StubProcess::WriteBinary
  AppendLe(out, static_cast<uint64_t>(first_request), 8);
  AppendLe(out, requests.size(), 4);
  uint64_t offset = 0;
  for (const RequestHeader& r : requests) {
    if (r.correlation_id_str.size() > kU32 || r.id.size() > kU32 ||
        r.parameters_json.size() > kU32 || r.requested_outputs.size() > kU16 ||
        r.inputs.size() > kU16) {
      return InvalidArgument("a request is too large for the Python stub");
    }
    AppendLe(out, r.flags, 4);
    AppendLe(out, r.correlation_id, 8);
    AppendLe(out, r.correlation_id_str.size(), 4);
    AppendLe(out, r.id.size(), 4);
    AppendLe(out, r.parameters_json.size(), 4);
    AppendLe(out, r.requested_outputs.size(), 2);
    AppendLe(out, r.inputs.size(), 2);
    out->append(r.correlation_id_str);
    out->append(r.id);
    out->append(r.parameters_json);
    for (const std::string& o : r.requested_outputs) {
      if (o.size() > kU16) return InvalidArgument("an output name is too long for the Python stub");
      AppendLe(out, o.size(), 2);
      out->append(o);
    }
    for (const backend::TensorRef& t : r.inputs) {
      if (t.name.size() > kU16 || t.shape.size() > 0xff) {
        return InvalidArgument("input '" + std::string(t.name) +
                               "' is too large for the Python stub");
      }
      AppendLe(out, t.name.size(), 2);
      AppendLe(out, static_cast<uint64_t>(t.data_type), 1);
      AppendLe(out, t.shape.size(), 1);
      AppendLe(out, offset, 8);
      AppendLe(out, t.data.size(), 8);
      out->append(t.name);
      for (int64_t d : t.shape) AppendLe(out, static_cast<uint64_t>(d), 8);
      offset += t.data.size();
    }
  }
  return Status::Ok();
}

}  // namespace nereid::backends::python
