#include "frontends/http/json_generate_codec.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

#include <map>
#include <utility>
#include <variant>

#include "common/error_text.h"
#include "frontends/http/json_tensor_data.h"
#include "frontends/http/json_writer.h"

namespace nereid {
namespace {

using Value = rapidjson::Value;

// Arrays nested deeper than this are refused (the walk below recurses).
constexpr int kMaxArrayDepth = 32;

// TritonJson's texts for a value of the wrong JSON type.
Status WrongJsonType(DataType type) {
  if (type == DataType::kBool) return Internal("attempt to access JSON non-boolean as boolean");
  if (type == DataType::kBytes) return Internal("attempt to access JSON non-string as string");
  if (type == DataType::kFp32 || type == DataType::kFp64 || type == DataType::kFp16 ||
      type == DataType::kBf16) {
    return Internal("attempt to access JSON non-number as double");
  }
  if (type == DataType::kUint8 || type == DataType::kUint16 || type == DataType::kUint32 ||
      type == DataType::kUint64) {
    return Internal("attempt to access JSON non-unsigned-integer as unsigned-integer");
  }
  return Internal("attempt to access JSON non-signed-integer as signed-integer");
}

Status AppendScalar(const Value& v, JsonTensorAppender& out) {
  const DataType type = out.type();
  if (type == DataType::kBool) {
    if (!v.IsBool()) return WrongJsonType(type);
    return out.AppendBool(v.GetBool());
  }
  if (type == DataType::kBytes) {
    if (!v.IsString()) return WrongJsonType(type);
    return out.AppendString(std::string_view(v.GetString(), v.GetStringLength()));
  }
  if (type == DataType::kFp32 || type == DataType::kFp64 || type == DataType::kFp16 ||
      type == DataType::kBf16) {
    if (!v.IsNumber()) return WrongJsonType(type);
    return out.AppendDouble(v.GetDouble());
  }
  if (type == DataType::kUint8 || type == DataType::kUint16 || type == DataType::kUint32 ||
      type == DataType::kUint64) {
    if (!v.IsUint64()) return WrongJsonType(type);
    return out.AppendUint(v.GetUint64());
  }
  if (!v.IsInt64()) return WrongJsonType(type);
  return out.AppendInt(v.GetInt64());
}

Status AppendValues(const Value& v, int depth, JsonTensorAppender& out) {
  if (!v.IsArray()) return AppendScalar(v, out);
  if (depth >= kMaxArrayDepth) {
    return InvalidArgument("arrays nested more than " + std::to_string(kMaxArrayDepth) +
                           " deep are not supported");
  }
  for (const Value& e : v.GetArray()) NEREID_RETURN_IF_ERROR(AppendValues(e, depth + 1, out));
  return Status::Ok();
}

// Triton's two-pass fit of `count` elements into the metadata shape.
StatusOr<Shape> FitShape(const GenerateInputSpec& spec, int64_t count) {
  std::vector<int64_t> dims = spec.shape;
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (*it == -1) continue;
    if (*it <= 0 || count % *it != 0) {
      return InvalidArgument("The schema can not convert input '" + ClientText(spec.name) +
                             "' to tensor with proper shape");
    }
    count /= *it;
  }
  for (auto it = dims.rbegin(); it != dims.rend(); ++it) {
    if (*it == -1) {
      *it = count;
      count = 1;
    }
  }
  if (count != 1) {
    return InvalidArgument("The schema can not convert input '" + ClientText(spec.name) +
                           "' to tensor with proper shape");
  }
  return Shape(dims.begin(), dims.end());
}

Status AddInput(const GenerateInputSpec& spec, const Value& v, InferenceRequest* request) {
  for (const InferInput& existing : request->inputs) {
    if (existing.name == spec.name) {
      return InvalidArgument("input '" + ClientText(spec.name) + "' already exists in request");
    }
  }
  const int64_t count = v.IsArray() ? static_cast<int64_t>(v.Size()) : 1;
  auto data = std::make_shared<std::string>();
  JsonTensorAppender appender(spec.data_type, data.get());
  if (Status s = AppendValues(v, 0, appender); !s.ok()) {
    if (s.code() == StatusCode::kInternal) return s;  // TritonJson's own text
    return InvalidArgument("input '" + ClientText(spec.name) + "': " + s.message());
  }
  if (appender.count() != count) {
    return Internal("Shape does not match true shape of 'data' field");
  }
  NEREID_ASSIGN_OR_RETURN(Shape shape, FitShape(spec, count));
  InferInput input;
  input.name = spec.name;
  input.data_type = spec.data_type;
  input.shape = std::move(shape);
  input.data = std::span<const char>(data->data(), data->size());
  request->KeepAlive(std::move(data));
  request->inputs.push_back(std::move(input));
  return Status::Ok();
}

Status AddParameter(const std::string& key, const Value& v, InferenceRequest* request) {
  if (v.IsString()) {
    request->parameters.Set(key, std::string(v.GetString(), v.GetStringLength()));
  } else if (v.IsInt64()) {
    request->parameters.Set(key, v.GetInt64());
  } else if (v.IsBool()) {
    request->parameters.Set(key, v.GetBool());
  } else if (v.IsNumber()) {
    request->parameters.Set(key, v.GetDouble());
  } else {
    return InvalidArgument("parameter '" + ClientText(key) +
                           "' has invalid type. It should be either 'int', 'bool', or 'string'.");
  }
  return Status::Ok();
}

const GenerateInputSpec* FindInput(std::span<const GenerateInputSpec> inputs,
                                   std::string_view name) {
  for (const GenerateInputSpec& spec : inputs) {
    if (spec.name == name) return &spec;
  }
  return nullptr;
}

Status MapMember(const std::string& key, const Value& v, std::span<const GenerateInputSpec> inputs,
                 InferenceRequest* request) {
  if (const GenerateInputSpec* spec = FindInput(inputs, key)) return AddInput(*spec, v, request);
  return AddParameter(key, v, request);
}

Status MapObject(const Value& object, std::span<const GenerateInputSpec> inputs, bool top_level,
                 InferenceRequest* request) {
  for (const auto& member : object.GetObject()) {
    const std::string key(member.name.GetString(), member.name.GetStringLength());
    if (!top_level || key != "parameters") {
      NEREID_RETURN_IF_ERROR(MapMember(key, member.value, inputs, request));
      continue;
    }
    if (FindInput(inputs, key) != nullptr) {
      return InvalidArgument(
          "Keyword 'parameters' for nested schema also given as input tensor name");
    }
    if (!member.value.IsObject()) {
      return InvalidArgument(
          "Expected JSON object for keyword: 'parameters': attempt to access JSON non-object as "
          "object");
    }
    if (Status s = MapObject(member.value, inputs, false, request); !s.ok()) {
      return Status(s.code(), "Converting keyword: 'parameters': " + s.message());
    }
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<InferenceRequest>> DecodeGenerateRequest(
    std::string_view body, std::span<const GenerateInputSpec> inputs, const std::string& model,
    int64_t version) {
  rapidjson::Document doc;
  // Iterative: a deeply nested body must not exhaust the stack.
  doc.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseNanAndInfFlag>(body.data(),
                                                                             body.size());
  if (doc.HasParseError()) {
    return InvalidArgument(std::string("failed to parse the request JSON buffer: ") +
                           rapidjson::GetParseError_En(doc.GetParseError()) + " at " +
                           std::to_string(doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) return Internal("attempt to access JSON non-object as object");
  auto request = std::make_unique<InferenceRequest>();
  request->model_name = model;
  request->model_version = version;
  NEREID_RETURN_IF_ERROR(MapObject(doc, inputs, true, request.get()));
  return request;
}

StatusOr<std::string> EncodeGenerateResponse(const InferenceResponse& response) {
  // What each key holds, in Triton's std::map order; the first of a clashing name wins.
  using Item = std::variant<std::string, const ParameterValue*, const InferOutput*>;
  std::map<std::string, Item, std::less<>> items;
  if (!response.id.empty()) items.emplace("id", response.id);
  items.emplace("model_name", response.model_name);
  items.emplace("model_version", std::to_string(response.model_version));
  for (const auto& [key, value] : response.parameters) items.emplace(key, &value);
  for (const InferOutput& out : response.outputs) items.emplace(out.name, &out);

  std::string json;
  StringOutputStream stream(&json);
  JsonWriter w(stream);
  w.StartObject();
  for (const auto& [key, item] : items) {
    WriteJsonKey(w, key);
    if (const auto* s = std::get_if<std::string>(&item)) {
      WriteJsonString(w, *s);
    } else if (const auto* p = std::get_if<const ParameterValue*>(&item)) {
      WriteParameterValue(w, **p);
    } else {
      const InferOutput& out = *std::get<const InferOutput*>(item);
      int64_t count = 1;
      for (int64_t d : out.shape) count *= d;
      if (count == 1) {
        // Written as an array, then unwrapped: "[x]" -> "x".
        std::string one;
        StringOutputStream one_stream(&one);
        JsonWriter one_writer(one_stream);
        NEREID_RETURN_IF_ERROR(WriteTensorJson(out.data_type, out.data, 1, out.name, one_writer));
        w.RawValue(one.data() + 1, one.size() - 2, rapidjson::kNumberType);
      } else {
        NEREID_RETURN_IF_ERROR(WriteTensorJson(out.data_type, out.data, count, out.name, w));
      }
    }
  }
  w.EndObject();
  return json;
}

std::string SseEvent(std::string_view json) {
  std::string event;
  event.reserve(json.size() + 8);
  event.append("data: ").append(json).append("\n\n");
  return event;
}

}  // namespace nereid
