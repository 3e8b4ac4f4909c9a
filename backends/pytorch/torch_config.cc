#include "pytorch/torch_config.h"

#include <algorithm>

#include "common/config_json.h"

namespace nereid::backends::pytorch {
namespace {

bool NonEmptyArray(const rapidjson::Value& obj, const char* key) {
  const rapidjson::Value* v = FindMember(obj, key);
  return v != nullptr && v->IsArray() && !v->Empty();
}

StatusOr<DataType> ReadDataType(const rapidjson::Value& obj, const std::string& what) {
  std::string_view name = StringMember(obj, "data_type");
  std::optional<DataType> type = DataTypeFromConfigName(name);
  if (!type) return InvalidArgument(what + " has unknown data_type '" + std::string(name) + "'");
  return *type;
}

// The datatype of one control: START/END/READY say it through which *_false_true list is set,
// CORRID through data_type (as in Triton's sequence batcher).
StatusOr<DataType> ControlDataType(const rapidjson::Value& control, const std::string& name) {
  if (NonEmptyArray(control, "int32_false_true")) return DataType::kInt32;
  if (NonEmptyArray(control, "fp32_false_true")) return DataType::kFp32;
  if (NonEmptyArray(control, "bool_false_true")) return DataType::kBool;
  return ReadDataType(control, "control input '" + name + "'");
}

Status ReadControls(const rapidjson::Value& seq, TorchModelConfig* config) {
  const rapidjson::Value* list = FindMember(seq, "control_input");
  if (list == nullptr) return Status::Ok();
  if (!list->IsArray()) return InvalidArgument("'control_input' must be an array");
  for (const rapidjson::Value& entry : list->GetArray()) {
    SequenceTensor t;
    t.name = std::string(StringMember(entry, "name"));
    t.dims = {1};
    const rapidjson::Value* controls = FindMember(entry, "control");
    if (controls == nullptr || !controls->IsArray() || controls->Empty()) {
      return InvalidArgument("control input '" + t.name + "' has no 'control'");
    }
    NEREID_ASSIGN_OR_RETURN(t.data_type, ControlDataType((*controls)[0], t.name));
    config->controls.push_back(std::move(t));
  }
  return Status::Ok();
}

Status ReadStates(const rapidjson::Value& seq, TorchModelConfig* config) {
  const rapidjson::Value* list = FindMember(seq, "state");
  if (list == nullptr) return Status::Ok();
  if (!list->IsArray()) return InvalidArgument("'state' must be an array");
  for (const rapidjson::Value& entry : list->GetArray()) {
    SequenceTensor in, out;
    in.name = std::string(StringMember(entry, "input_name"));
    out.name = std::string(StringMember(entry, "output_name"));
    NEREID_ASSIGN_OR_RETURN(in.data_type, ReadDataType(entry, "state '" + in.name + "'"));
    auto dims = IntArrayMember(entry, "dims");
    if (!dims.ok()) return InvalidArgument("state '" + in.name + "': " + dims.status().message());
    in.dims = std::move(dims).value();
    out.data_type = in.data_type;
    out.dims = in.dims;
    config->state_inputs.push_back(std::move(in));
    config->state_outputs.push_back(std::move(out));
  }
  return Status::Ok();
}

}  // namespace

StatusOr<TorchModelConfig> ParseTorchModelConfig(std::string_view json) {
  TorchModelConfig config;
  NEREID_ASSIGN_OR_RETURN(config.base, ParseModelConfig(json));
  rapidjson::Document doc;
  NEREID_RETURN_IF_ERROR(ParseJsonObject(json, "model configuration", &doc));
  if (const rapidjson::Value* seq = FindMember(doc, "sequence_batching"); seq != nullptr) {
    Status status = ReadControls(*seq, &config);
    if (status.ok()) status = ReadStates(*seq, &config);
    if (!status.ok()) {
      return InvalidArgument("invalid model configuration: sequence_batching: " + status.message());
    }
  }
  // The common reader lists control and state tensors among the inputs/outputs (what most
  // backends want); this plugin maps them separately, so the configured lists keep only the
  // config's own `input` / `output` entries.
  auto drop = [](std::vector<IoConfig>& list, const std::vector<SequenceTensor>& sequence) {
    std::erase_if(list, [&](const IoConfig& io) {
      return std::any_of(sequence.begin(), sequence.end(),
                         [&](const SequenceTensor& t) { return t.name == io.name; });
    });
  };
  drop(config.base.inputs, config.controls);
  drop(config.base.inputs, config.state_inputs);
  drop(config.base.outputs, config.state_outputs);
  return config;
}

StatusOr<TorchSettings> ReadTorchSettings(const ModelConfig& config) {
  TorchSettings s;
  auto optional_bool = [&](const char* key) -> StatusOr<std::optional<bool>> {
    if (config.FindParameter(key) == nullptr) return std::optional<bool>();
    NEREID_ASSIGN_OR_RETURN(bool value, BoolParameter(config, key, false));
    return std::optional<bool>(value);
  };
  NEREID_ASSIGN_OR_RETURN(bool disable_optimized,
                          BoolParameter(config, "DISABLE_OPTIMIZED_EXECUTION", false));
  s.optimized_execution = !disable_optimized;
  NEREID_ASSIGN_OR_RETURN(s.inference_mode, BoolParameter(config, "INFERENCE_MODE", true));
  NEREID_ASSIGN_OR_RETURN(s.jit_executor, optional_bool("ENABLE_JIT_EXECUTOR"));
  NEREID_ASSIGN_OR_RETURN(s.jit_profiling, optional_bool("ENABLE_JIT_PROFILING"));
  NEREID_ASSIGN_OR_RETURN(s.tensor_fuser, optional_bool("ENABLE_TENSOR_FUSER"));
  NEREID_ASSIGN_OR_RETURN(s.weight_sharing, BoolParameter(config, "ENABLE_WEIGHT_SHARING", false));
  NEREID_ASSIGN_OR_RETURN(int64_t intra, IntParameter(config, "INTRA_OP_THREAD_COUNT", 1, 0, 1024));
  s.intra_op_threads = static_cast<int>(intra);
  if (config.FindParameter("INTER_OP_THREAD_COUNT") != nullptr) {
    NEREID_ASSIGN_OR_RETURN(int64_t inter,
                            IntParameter(config, "INTER_OP_THREAD_COUNT", 1, 1, 1024));
    s.inter_op_threads = static_cast<int>(inter);
  }
  return s;
}

bool TorchSupports(DataType type) {
  switch (type) {
    case DataType::kBool:
    case DataType::kUint8:
    case DataType::kInt8:
    case DataType::kInt16:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFp16:
    case DataType::kFp32:
    case DataType::kFp64:
    case DataType::kBf16:
    case DataType::kBytes:
      return true;
    default:
      return false;
  }
}

}  // namespace nereid::backends::pytorch
