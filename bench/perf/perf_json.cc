#include "perf_json.h"

#include <rapidjson/document.h>
#include <rapidjson/error/en.h>

namespace nereid::perf {
namespace {

using rapidjson::Value;

StatusOr<rapidjson::Document> Parse(std::string_view body, std::string_view what) {
  rapidjson::Document doc;
  doc.Parse(body.data(), body.size());
  if (doc.HasParseError()) {
    return InvalidArgument("invalid " + std::string(what) +
                           " JSON: " + rapidjson::GetParseError_En(doc.GetParseError()) +
                           " at offset " + std::to_string(doc.GetErrorOffset()));
  }
  if (!doc.IsObject()) return InvalidArgument(std::string(what) + " JSON is not an object");
  return doc;
}

StatusOr<std::vector<int64_t>> Dims(const Value& v, std::string_view what) {
  if (!v.IsArray()) return InvalidArgument(std::string(what) + ": shape is not an array");
  std::vector<int64_t> dims;
  for (const Value& d : v.GetArray()) {
    if (!d.IsInt64()) return InvalidArgument(std::string(what) + ": shape has a non-integer");
    dims.push_back(d.GetInt64());
  }
  return dims;
}

StatusOr<std::vector<TensorSpec>> Tensors(const Value& doc, const char* key) {
  std::vector<TensorSpec> out;
  auto it = doc.FindMember(key);
  if (it == doc.MemberEnd()) return out;
  if (!it->value.IsArray())
    return InvalidArgument(std::string("metadata: ") + key + " is not an array");
  for (const Value& t : it->value.GetArray()) {
    if (!t.IsObject() || !t.HasMember("name") || !t["name"].IsString() ||
        !t.HasMember("datatype") || !t["datatype"].IsString() || !t.HasMember("shape")) {
      return InvalidArgument(std::string("metadata: an entry of ") + key +
                             " lacks name, datatype or shape");
    }
    NEREID_ASSIGN_OR_RETURN(auto dims, Dims(t["shape"], "metadata"));
    out.push_back({t["name"].GetString(), t["datatype"].GetString(), std::move(dims)});
  }
  return out;
}

uint64_t U64(const Value& obj, const char* key) {
  auto it = obj.FindMember(key);
  if (it == obj.MemberEnd()) return 0;
  if (it->value.IsUint64()) return it->value.GetUint64();
  return 0;
}

PhaseStat Phase(const Value& stats, const char* key) {
  auto it = stats.FindMember(key);
  if (it == stats.MemberEnd() || !it->value.IsObject()) return {};
  return {U64(it->value, "count"), U64(it->value, "ns")};
}

void Add(PhaseStat& into, const PhaseStat& p) {
  into.count += p.count;
  into.ns += p.ns;
}

StatusOr<FileInput> OneInput(const Value& v, const std::string& name) {
  FileInput in;
  const Value* content = &v;
  if (v.IsObject()) {
    auto c = v.FindMember("content");
    if (c == v.MemberEnd()) {
      return InvalidArgument("input data '" + name + "': object without \"content\"");
    }
    content = &c->value;
    auto s = v.FindMember("shape");
    if (s != v.MemberEnd()) {
      NEREID_ASSIGN_OR_RETURN(in.shape, Dims(s->value, "input data '" + name + "'"));
      in.has_shape = true;
    }
  }
  if (!content->IsArray()) return InvalidArgument("input data '" + name + "' is not an array");
  for (const Value& e : content->GetArray()) {
    if (e.IsNumber()) {
      in.numbers.push_back(e.GetDouble());
    } else if (e.IsBool()) {
      in.numbers.push_back(e.GetBool() ? 1 : 0);
    } else if (e.IsString()) {
      in.strings.emplace_back(e.GetString(), e.GetStringLength());
    } else {
      return InvalidArgument("input data '" + name +
                             "': elements must be numbers, booleans or "
                             "strings (nested arrays are not supported, give \"shape\")");
    }
  }
  if (!in.numbers.empty() && !in.strings.empty()) {
    return InvalidArgument("input data '" + name + "' mixes numbers and strings");
  }
  return in;
}

}  // namespace

StatusOr<ModelMetadata> ParseMetadataJson(std::string_view body) {
  NEREID_ASSIGN_OR_RETURN(rapidjson::Document doc, Parse(body, "model metadata"));
  ModelMetadata md;
  NEREID_ASSIGN_OR_RETURN(md.inputs, Tensors(doc, "inputs"));
  NEREID_ASSIGN_OR_RETURN(md.outputs, Tensors(doc, "outputs"));
  if (md.inputs.empty()) return InvalidArgument("model metadata lists no inputs");
  return md;
}

StatusOr<ServerStats> ParseStatsJson(std::string_view body) {
  NEREID_ASSIGN_OR_RETURN(rapidjson::Document doc, Parse(body, "statistics"));
  auto it = doc.FindMember("model_stats");
  if (it == doc.MemberEnd() || !it->value.IsArray()) {
    return InvalidArgument("statistics JSON has no model_stats array");
  }
  ServerStats s;
  for (const Value& m : it->value.GetArray()) {
    if (!m.IsObject()) return InvalidArgument("statistics: a model_stats entry is not an object");
    s.inference_count += U64(m, "inference_count");
    s.execution_count += U64(m, "execution_count");
    auto is = m.FindMember("inference_stats");
    if (is == m.MemberEnd() || !is->value.IsObject()) continue;
    const Value& st = is->value;
    Add(s.success, Phase(st, "success"));
    Add(s.fail, Phase(st, "fail"));
    Add(s.queue, Phase(st, "queue"));
    Add(s.compute_input, Phase(st, "compute_input"));
    Add(s.compute_infer, Phase(st, "compute_infer"));
    Add(s.compute_output, Phase(st, "compute_output"));
  }
  return s;
}

StatusOr<std::map<std::string, FileInput>> ParseInputDataJson(std::string_view body) {
  NEREID_ASSIGN_OR_RETURN(rapidjson::Document doc, Parse(body, "input data"));
  auto it = doc.FindMember("data");
  if (it == doc.MemberEnd() || !it->value.IsArray() || it->value.Empty() ||
      !it->value[0].IsObject()) {
    return InvalidArgument("input data JSON needs \"data\": [{...}, ...]");
  }
  std::map<std::string, FileInput> out;
  for (const auto& m : it->value[0].GetObject()) {
    std::string name(m.name.GetString(), m.name.GetStringLength());
    NEREID_ASSIGN_OR_RETURN(out[name], OneInput(m.value, name));
  }
  return out;
}

}  // namespace nereid::perf
