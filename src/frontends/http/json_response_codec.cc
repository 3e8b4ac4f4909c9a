#include "frontends/http/json_response_codec.h"

#include <variant>

#include "core/tensor/shape.h"
#include "frontends/http/binary_data_codec.h"
#include "frontends/http/json_reply_buffer.h"
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

namespace {

// The response for `r` without the owner of its JSON, which is left in *buffer: the caller keeps
// it alive with the body (HttpBody::KeepAlive), and with it `r` when *views_binary says the body
// views r's output bytes.
StatusOr<HttpResponse> Encode(const InferenceResponse& r, bool binary_output_default,
                              std::shared_ptr<JsonReplyBuffer>* buffer, bool* views_binary) {
  *views_binary = false;
  *buffer = NewJsonReplyBuffer();
  std::string& json = (*buffer)->text;
  json.reserve(EstimateJsonSize(r, binary_output_default));
  StringOutputStream stream(&json);
  JsonWriter& w = ThreadJsonWriter(stream);
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
  // Which outputs travel as binary data is asked again below rather than remembered: a list of
  // them was an allocation per reply.
  auto travels_binary = [&](const InferOutput& out) {
    return !out.in_shared_memory && IsBinaryOutput(r, out, binary_output_default);
  };
  bool any_binary = false;
  for (const InferOutput& out : r.outputs) {
    const bool binary = travels_binary(out);
    NEREID_RETURN_IF_ERROR(WriteOutput(out, binary, w));
    any_binary = any_binary || (binary && !out.data.empty());
  }
  w.EndArray();
  w.EndObject();

  HttpResponse http;
  http.status = 200;
  const size_t json_size = json.size();
  http.body.AppendView(json);
  if (!any_binary) {
    http.headers.Add("Content-Type", "application/json");
    return http;
  }
  http.headers.Reserve(2);
  http.headers.Add("Content-Type", "application/octet-stream");
  http.headers.Add(std::string(kInferHeaderContentLengthHeader), std::to_string(json_size));
  for (const InferOutput& out : r.outputs) {
    if (!out.data.empty() && travels_binary(out)) http.body.AppendView(out.data);
  }
  *views_binary = true;
  return http;
}

}  // namespace

StatusOr<HttpResponse> EncodeInferResponse(std::shared_ptr<const InferenceResponse> response,
                                           bool binary_output_default) {
  std::shared_ptr<JsonReplyBuffer> buffer;
  bool views_binary = false;
  StatusOr<HttpResponse> http = Encode(*response, binary_output_default, &buffer, &views_binary);
  if (!http.ok()) return http;
  http->body.KeepAlive(std::move(buffer));
  if (views_binary) http->body.KeepAlive(std::move(response));
  return http;
}

StatusOr<HttpResponse> EncodeInferResponse(std::unique_ptr<InferenceResponse>&& response,
                                           bool binary_output_default) {
  std::shared_ptr<JsonReplyBuffer> buffer;
  bool views_binary = false;
  StatusOr<HttpResponse> http = Encode(*response, binary_output_default, &buffer, &views_binary);
  if (!http.ok()) return http;
  // The buffer owns the response: one owner for the JSON and the output bytes it is sent with.
  if (views_binary) buffer->response = std::move(response);
  http->body.KeepAlive(std::move(buffer));
  return http;
}

}  // namespace nereid
