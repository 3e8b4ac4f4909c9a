#include "common/config_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "common/config_json.h"

namespace nereid::backends {
namespace {

Status ReadIo(const rapidjson::Value& entry, std::string_view kind, IoConfig* io) {
  if (!entry.IsObject()) return InvalidArgument(std::string(kind) + " entries must be objects");
  io->name = std::string(StringMember(entry, "name"));
  if (io->name.empty()) return InvalidArgument(std::string(kind) + " entry without a name");
  std::string_view type_name = StringMember(entry, "data_type");
  if (!type_name.empty() && type_name != "TYPE_INVALID") {
    std::optional<DataType> type = DataTypeFromConfigName(type_name);
    if (!type) {
      return InvalidArgument(std::string(kind) + " '" + io->name + "' has unknown data_type " +
                             std::string(type_name));
    }
    io->data_type = *type;
  }
  auto dims = IntArrayMember(entry, "dims");
  if (!dims.ok())
    return InvalidArgument(std::string(kind) + " '" + io->name + "': " + dims.status().message());
  io->dims = std::move(dims).value();
  if (const rapidjson::Value* reshape = FindMember(entry, "reshape"); reshape != nullptr) {
    auto shape = IntArrayMember(*reshape, "shape");
    if (!shape.ok())
      return InvalidArgument(std::string(kind) + " '" + io->name +
                             "' reshape: " + shape.status().message());
    io->reshape = std::move(shape).value();
  }
  const rapidjson::Value* optional = FindMember(entry, "optional");
  io->optional = optional != nullptr && optional->IsBool() && optional->GetBool();
  const rapidjson::Value* ragged = FindMember(entry, "allow_ragged_batch");
  io->ragged = ragged != nullptr && ragged->IsBool() && ragged->GetBool();
  return Status::Ok();
}

std::vector<std::string> StringArray(const rapidjson::Value& obj, const char* key) {
  std::vector<std::string> out;
  const rapidjson::Value* list = FindMember(obj, key);
  if (list == nullptr || !list->IsArray()) return out;
  for (const rapidjson::Value& v : list->GetArray()) {
    if (v.IsString()) out.emplace_back(v.GetString(), v.GetStringLength());
  }
  return out;
}

Status ReadBatchIo(const rapidjson::Value& doc, ModelConfig* config) {
  if (const rapidjson::Value* list = FindMember(doc, "batch_input");
      list != nullptr && list->IsArray()) {
    for (const rapidjson::Value& entry : list->GetArray()) {
      BatchInputConfig bi;
      bi.kind = std::string(StringMember(entry, "kind"));
      if (bi.kind.empty()) bi.kind = "BATCH_ELEMENT_COUNT";  // proto3 default, not rendered
      bi.target_names = StringArray(entry, "target_name");
      bi.data_type =
          DataTypeFromConfigName(StringMember(entry, "data_type")).value_or(DataType::kInvalid);
      std::vector<std::string> sources = StringArray(entry, "source_input");
      if (!sources.empty()) bi.source_input = sources.front();
      config->batch_inputs.push_back(std::move(bi));
    }
  }
  if (const rapidjson::Value* list = FindMember(doc, "batch_output");
      list != nullptr && list->IsArray()) {
    for (const rapidjson::Value& entry : list->GetArray()) {
      for (std::string& t : StringArray(entry, "target_name")) {
        config->batch_output_targets.push_back(std::move(t));
      }
    }
  }
  return Status::Ok();
}

Status ReadIoList(const rapidjson::Value& doc, const char* key, std::vector<IoConfig>* out) {
  const rapidjson::Value* list = FindMember(doc, key);
  if (list == nullptr) return Status::Ok();
  if (!list->IsArray()) return InvalidArgument(std::string("'") + key + "' must be an array");
  out->resize(list->Size());
  for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
    NEREID_RETURN_IF_ERROR(ReadIo((*list)[i], key, &(*out)[i]));
  }
  return Status::Ok();
}

bool HasEntries(const rapidjson::Value& v, const char* key) {
  const rapidjson::Value* list = FindMember(v, key);
  return list != nullptr && list->IsArray() && !list->Empty();
}

// The sequence batcher's control and implicit-state tensors are model inputs and outputs the
// server feeds and reads (as Triton's backends treat them): appended to the configured lists.
Status ReadSequenceTensors(const rapidjson::Value& doc, ModelConfig* config) {
  const rapidjson::Value* sb = FindMember(doc, "sequence_batching");
  if (sb == nullptr || !sb->IsObject()) return Status::Ok();
  auto listed = [](const std::vector<IoConfig>& list, std::string_view name) {
    return std::any_of(list.begin(), list.end(),
                       [&](const IoConfig& io) { return io.name == name; });
  };
  if (const rapidjson::Value* inputs = FindMember(*sb, "control_input");
      inputs != nullptr && inputs->IsArray()) {
    for (const rapidjson::Value& input : inputs->GetArray()) {
      const rapidjson::Value* controls = FindMember(input, "control");
      if (controls == nullptr || !controls->IsArray() || controls->Empty()) continue;
      const rapidjson::Value& c = (*controls)[0];
      IoConfig io;
      io.name = std::string(StringMember(input, "name"));
      io.dims = {1};
      if (HasEntries(c, "int32_false_true")) {
        io.data_type = DataType::kInt32;
      } else if (HasEntries(c, "fp32_false_true")) {
        io.data_type = DataType::kFp32;
      } else if (HasEntries(c, "bool_false_true")) {
        io.data_type = DataType::kBool;
      } else {
        io.data_type =
            DataTypeFromConfigName(StringMember(c, "data_type")).value_or(DataType::kInvalid);
      }
      if (!io.name.empty() && !listed(config->inputs, io.name)) config->inputs.push_back(io);
    }
  }
  if (const rapidjson::Value* states = FindMember(*sb, "state");
      states != nullptr && states->IsArray()) {
    for (const rapidjson::Value& state : states->GetArray()) {
      IoConfig io;
      io.data_type =
          DataTypeFromConfigName(StringMember(state, "data_type")).value_or(DataType::kInvalid);
      auto dims = IntArrayMember(state, "dims");
      if (!dims.ok()) return InvalidArgument("state: " + dims.status().message());
      io.dims = std::move(dims).value();
      io.name = std::string(StringMember(state, "input_name"));
      if (!listed(config->inputs, io.name)) config->inputs.push_back(io);
      io.name = std::string(StringMember(state, "output_name"));
      if (!listed(config->outputs, io.name)) config->outputs.push_back(io);
    }
  }
  return Status::Ok();
}

Status ReadParameters(const rapidjson::Value& doc, ModelConfig* config) {
  const rapidjson::Value* params = FindMember(doc, "parameters");
  if (params == nullptr) return Status::Ok();
  if (!params->IsObject()) return InvalidArgument("'parameters' must be an object");
  for (const auto& member : params->GetObject()) {
    config->parameters.emplace_back(
        std::string(member.name.GetString(), member.name.GetStringLength()),
        std::string(StringMember(member.value, "string_value")));
  }
  return Status::Ok();
}

Status ReadConfig(const rapidjson::Document& doc, ModelConfig* config) {
  config->name = std::string(StringMember(doc, "name"));
  config->platform = std::string(StringMember(doc, "platform"));
  config->backend = std::string(StringMember(doc, "backend"));
  NEREID_ASSIGN_OR_RETURN(config->max_batch_size, IntMember(doc, "max_batch_size", 0));
  if (config->max_batch_size < 0) return InvalidArgument("'max_batch_size' must be >= 0");
  NEREID_RETURN_IF_ERROR(ReadIoList(doc, "input", &config->inputs));
  NEREID_RETURN_IF_ERROR(ReadIoList(doc, "output", &config->outputs));
  NEREID_RETURN_IF_ERROR(ReadSequenceTensors(doc, config));
  NEREID_RETURN_IF_ERROR(ReadBatchIo(doc, config));
  NEREID_RETURN_IF_ERROR(ReadParameters(doc, config));
  if (const rapidjson::Value* opt = FindMember(doc, "optimization"); opt != nullptr) {
    if (const rapidjson::Value* graph = FindMember(*opt, "graph"); graph != nullptr) {
      NEREID_ASSIGN_OR_RETURN(config->graph_optimization_level, IntMember(*graph, "level", 0));
    }
  }
  return Status::Ok();
}

}  // namespace

const std::string* ModelConfig::FindParameter(std::string_view key) const {
  for (const auto& [k, v] : parameters) {
    if (k == key) return &v;
  }
  return nullptr;
}

bool ModelConfig::IsBatchOutput(std::string_view output) const {
  return std::find(batch_output_targets.begin(), batch_output_targets.end(), output) !=
         batch_output_targets.end();
}

StatusOr<ModelConfig> ParseModelConfig(std::string_view json) {
  rapidjson::Document doc;
  NEREID_RETURN_IF_ERROR(ParseJsonObject(json, "model configuration", &doc));
  ModelConfig config;
  Status status = ReadConfig(doc, &config);
  if (!status.ok()) {
    return InvalidArgument("invalid model configuration: " + status.message());
  }
  return config;
}

std::vector<int64_t> ModelSideShape(const IoConfig& io, int64_t max_batch_size) {
  if (io.ragged) return {-1};
  const std::vector<int64_t>& dims = io.reshape ? *io.reshape : io.dims;
  std::vector<int64_t> shape;
  shape.reserve(dims.size() + 1);
  if (max_batch_size > 0) shape.push_back(-1);
  shape.insert(shape.end(), dims.begin(), dims.end());
  return shape;
}

StatusOr<int64_t> IntParameter(const ModelConfig& config, std::string_view key, int64_t fallback,
                               int64_t min_value, int64_t max_value) {
  const std::string* text = config.FindParameter(key);
  if (text == nullptr) return fallback;
  int64_t value = 0;
  const char* end = text->data() + text->size();
  auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end || text->empty() || value < min_value || value > max_value) {
    return InvalidArgument("parameter '" + std::string(key) + "' must be an integer in [" +
                           std::to_string(min_value) + ", " + std::to_string(max_value) +
                           "], got '" + *text + "'");
  }
  return value;
}

StatusOr<bool> BoolParameter(const ModelConfig& config, std::string_view key, bool fallback) {
  const std::string* text = config.FindParameter(key);
  if (text == nullptr) return fallback;
  std::string lower(*text);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower == "1" || lower == "true" || lower == "on" || lower == "yes") return true;
  if (lower == "0" || lower == "false" || lower == "off" || lower == "no") return false;
  return InvalidArgument("parameter '" + std::string(key) + "' must be a boolean, got '" + *text +
                         "'");
}

std::string ShapeToString(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(shape[i]);
  }
  out += ']';
  return out;
}

}  // namespace nereid::backends
