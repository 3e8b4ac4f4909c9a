#include "python/bls_frames.h"

#include <rapidjson/document.h>

#include <limits>
#include <memory>
#include <utility>

#include "common/config_json.h"
#include "python/binary_codec.h"

namespace nereid::backends::python {
namespace {

constexpr uint64_t kU16 = 0xffff;

Status CutShort() { return MalformedStubMessage("a BLS frame is cut short"); }

// A BLS request's parameters: the JSON object pb_utils made ("{}" for most: not parsed), whose
// values are strings, integers or bools (Triton's PyParametersToJSON).
Status ParseParameters(std::string_view json, StubMessage* m) {
  if (json == "{}") return Status::Ok();
  rapidjson::Document doc;
  if (Status s = ParseJsonObject(json, "BLS parameters", &doc); !s.ok()) {
    return MalformedStubMessage(std::string(s.message()));
  }
  const rapidjson::Value& object = doc;  // const iterators (clang: no ambiguous operator!=)
  for (const auto& p : object.GetObject()) {
    std::string key(p.name.GetString(), p.name.GetStringLength());
    if (p.value.IsBool()) {
      m->parameters.emplace_back(std::move(key), p.value.GetBool());
    } else if (p.value.IsInt64()) {
      m->parameters.emplace_back(std::move(key), p.value.GetInt64());
    } else if (p.value.IsString()) {
      m->parameters.emplace_back(std::move(key),
                                 std::string(p.value.GetString(), p.value.GetStringLength()));
    } else {
      return MalformedStubMessage("parameter '" + key + "' is not a string, an integer or a bool");
    }
  }
  return Status::Ok();
}

StatusOr<StubMessage> ParseBls(BinaryReader* in, uint64_t payload_size, uint64_t pool_size) {
  StubMessage m;
  m.op = "bls";
  uint64_t decoupled = 0, apart = 0, pad = 0, flags = 0, tag = 0, version = 0, timeout = 0,
           correlation = 0, parent = 0, name_size = 0, id_size = 0, corr_size = 0, params_size = 0,
           requested = 0, inputs = 0;
  if (!in->Le(1, &decoupled) || !in->Le(1, &apart) || !in->Le(1, &pad) || !in->Le(4, &flags) ||
      !in->Le(8, &tag) || !in->Le(8, &version) || !in->Le(8, &timeout) ||
      !in->Le(8, &correlation) || !in->Le(8, &parent) || !in->Le(4, &name_size) ||
      !in->Le(4, &id_size) || !in->Le(4, &corr_size) || !in->Le(4, &params_size) ||
      !in->Le(2, &requested) || !in->Le(2, &inputs)) {
    return CutShort();
  }
  if (timeout > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return MalformedStubMessage("malformed 'timeout'");
  }
  m.decoupled = decoupled != 0;
  m.apart = apart != 0;
  m.flags = static_cast<uint32_t>(flags);
  m.tag = static_cast<int64_t>(tag);
  m.model_version = static_cast<int64_t>(version);
  m.timeout_us = timeout;
  m.correlation_id = correlation;
  // Any value: an id that names no request of the execution gives the call no parent trace.
  m.parent_request = static_cast<int64_t>(parent);
  std::string parameters;
  if (!in->Bytes(name_size, &m.model_name) || !in->Bytes(id_size, &m.request_id) ||
      !in->Bytes(corr_size, &m.correlation_id_str) || !in->Bytes(params_size, &parameters)) {
    return CutShort();
  }
  NEREID_RETURN_IF_ERROR(ParseParameters(parameters, &m));
  m.requested_outputs.resize(requested);
  for (std::string& name : m.requested_outputs) {
    uint64_t size = 0;
    if (!in->Le(2, &size) || !in->Bytes(size, &name)) return CutShort();
  }
  m.inputs.reserve(inputs);
  for (uint64_t i = 0; i < inputs; ++i) {
    NEREID_ASSIGN_OR_RETURN(TensorDesc t, ParsePlacedTensor(in, payload_size, pool_size));
    m.inputs.push_back(std::move(t));
  }
  return m;
}

}  // namespace

StatusOr<StubMessage> ParseBlsFrame(std::string_view bytes, uint64_t payload_size,
                                    uint64_t pool_size) {
  BinaryReader in(bytes);
  uint64_t kind = 0;
  if (!in.Le(1, &kind)) return CutShort();
  StubMessage m;
  if (kind == static_cast<uint64_t>(kBinaryBls)) {
    NEREID_ASSIGN_OR_RETURN(m, ParseBls(&in, payload_size, pool_size));
  } else {  // kBinaryBlsNext
    uint64_t pad = 0, tag = 0, stream = 0;
    if (!in.Le(7, &pad) || !in.Le(8, &tag) || !in.Le(8, &stream)) return CutShort();
    m.op = "bls_next";
    m.tag = static_cast<int64_t>(tag);
    m.request = static_cast<int64_t>(stream);
  }
  if (!in.AtEnd()) return MalformedStubMessage("a BLS frame has trailing bytes");
  return m;
}

std::shared_ptr<const void> BlsParentTrace(int64_t parent_request, int64_t first_request,
                                           std::span<const backend::RequestInfo> requests) {
  if (parent_request < 0 || parent_request < first_request) return nullptr;
  const auto i = static_cast<uint64_t>(parent_request - first_request);
  return i < requests.size() ? requests[i].trace : nullptr;
}

bool EncodeBlsAnswer(int64_t tag, const Status& error,
                     std::span<const backend::InferTensor> outputs, bool final, std::string* out) {
  if (error.ok()) {
    for (const backend::InferTensor& t : outputs) {
      if (t.name.size() > kU16 || t.shape.size() > 0xff) {
        return EncodeBlsAnswer(
            tag, InvalidArgument("output '" + t.name + "' is too large for the Python stub"), {},
            final, out);
      }
    }
  }
  const std::string_view message = error.ok() ? std::string_view() : error.message();
  out->clear();
  out->push_back(kBinaryBlsAnswer);
  AppendLe(out, final ? 1 : 0, 1);
  AppendLe(out, error.ok() ? 0 : 1, 1);
  AppendLe(out, error.ok() ? 0 : static_cast<uint64_t>(TritonErrorCodeOf(error.code())), 1);
  AppendLe(out, error.ok() ? outputs.size() : 0, 4);
  AppendLe(out, message.size(), 4);
  AppendLe(out, static_cast<uint64_t>(tag), 8);
  out->append(24, '\0');  // the pool block: StubProcess::WriteBinary
  out->append(message);
  if (!error.ok()) return false;
  for (const backend::InferTensor& t : outputs) {
    AppendLe(out, t.name.size(), 2);
    AppendLe(out, static_cast<uint64_t>(t.data_type), 1);
    AppendLe(out, t.shape.size(), 1);
    AppendLe(out, t.data.size(), 8);
    out->append(t.name);
    for (int64_t d : t.shape) AppendLe(out, static_cast<uint64_t>(d), 8);
  }
  return true;
}

}  // namespace nereid::backends::python
