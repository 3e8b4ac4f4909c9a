#include "frontends/http/json_response_codec.h"

#include <variant>

#include "core/tensor/shape.h"
#include "frontends/http/binary_data_codec.h"
#include "frontends/http/json_tensor_data.h"
#include "frontends/http/json_writer.h"

namespace nereid {
namespace {

void WriteParameters(const Parameters& params, JsonWriter& w) {
  w.StartObject();
  for (const auto& [key, value] : params) {
    WriteJsonKey(w, key);
    WriteParameterValue(w, value);
  }
  w.EndObject();
}

Status WriteOutput(const InferOutput& out, bool binary, JsonWriter& w) {
  w.StartObject();
  WriteJsonKey(w, "name");
  WriteJsonString(w, out.name);
  WriteJsonKey(w, "datatype");
  WriteJsonString(w, DataTypeWireName(out.data_type));
  WriteJsonKey(w, "shape");
  w.StartArray();
  for (int64_t d : out.shape) w.Int64(d);
  w.EndArray();
  if (out.in_shared_memory) {
    // Written into the client's region: name, datatype and shape only, as Triton.
  } else if (binary) {
    WriteJsonKey(w, "parameters");
    w.StartObject();
    WriteJsonKey(w, "binary_data_size");
    w.Uint64(out.data.size());
    w.EndObject();
  } else {
    const std::optional<int64_t> count = ElementCount(out.shape);
    if (!count) {
      return Internal("output tensor shape does not match size of output for '" + out.name + "'");
    }
    WriteJsonKey(w, "data");
    NEREID_RETURN_IF_ERROR(WriteTensorJson(out.data_type,
                                           std::span<const char>(out.data.data(), out.data.size()),
                                           *count, out.name, w));
  }
  w.EndObject();
  return Status::Ok();
}

size_t EstimateJsonSize(const InferenceResponse& r, bool binary_output_default) {
  size_t n = 128 + r.model_name.size() + r.id.size();
  for (const InferOutput& o : r.outputs) {
    n += 96 + o.name.size();
    if (!IsBinaryOutput(r, o, binary_output_default)) n += o.data.size() * 3;
  }
  return n;
}

}  // namespace

bool IsBinaryOutput(const InferenceResponse& response, const InferOutput& output,
                    bool binary_output_default) {
  // As in Triton: a requested output is binary only when its own "binary_data" says so; the
  // request-level "binary_data_output" is the default for outputs the request does not list.
  if (response.request != nullptr) {
    for (const RequestedOutput& ro : response.request->outputs) {
      if (ro.name != output.name) continue;
      return GetBool(ro.parameters, "binary_data").value_or(false);
    }
  }
  return binary_output_default;
}

StatusOr<HttpResponse> EncodeInferResponse(std::shared_ptr<const InferenceResponse> response,
                                           bool binary_output_default) {
  const InferenceResponse& r = *response;
  std::string json;
  json.reserve(EstimateJsonSize(r, binary_output_default));
  StringOutputStream stream(&json);
  JsonWriter w(stream);
  w.StartObject();
  if (!r.id.empty()) {
    WriteJsonKey(w, "id");
    WriteJsonString(w, r.id);
  }
  WriteJsonKey(w, "model_name");
  WriteJsonString(w, r.model_name);
  WriteJsonKey(w, "model_version");
  WriteJsonString(w, std::to_string(r.model_version));
  if (!r.parameters.empty()) {
    WriteJsonKey(w, "parameters");
    WriteParameters(r.parameters, w);
  }
  WriteJsonKey(w, "outputs");
  w.StartArray();
  std::vector<const InferOutput*> binary_outputs;
  for (const InferOutput& out : r.outputs) {
    const bool binary = !out.in_shared_memory && IsBinaryOutput(r, out, binary_output_default);
    NEREID_RETURN_IF_ERROR(WriteOutput(out, binary, w));
    if (binary && !out.data.empty()) binary_outputs.push_back(&out);
  }
  w.EndArray();
  w.EndObject();

  HttpResponse http;
  http.status = 200;
  const size_t json_size = json.size();
  http.body.Append(std::move(json));
  if (binary_outputs.empty()) {
    http.headers.Add("Content-Type", "application/json");
    return http;
  }
  http.headers.Add("Content-Type", "application/octet-stream");
  http.headers.Add(std::string(kInferHeaderContentLengthHeader), std::to_string(json_size));
  for (const InferOutput* out : binary_outputs) http.body.AppendView(out->data);
  http.body.KeepAlive(std::move(response));
  return http;
}

}  // namespace nereid
