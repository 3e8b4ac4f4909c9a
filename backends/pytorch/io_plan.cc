#include "pytorch/io_plan.h"

#include <algorithm>
#include <cctype>

namespace nereid::backends::pytorch {
namespace {

std::string LoadError(const std::string& model_name, const std::string& detail) {
  return "unable to load model '" + model_name + "', " + detail;
}

Status CheckTensor(const std::string& model_name, const std::string& kind, const Binding& b) {
  if (!TorchSupports(b.data_type)) {
    return InvalidArgument("unsupported datatype " + std::string(DataTypeConfigName(b.data_type)) +
                           " for " + kind + " '" + b.name + "' for model '" + model_name + "'");
  }
  if (b.data_type == DataType::kBytes && b.shape.size() > 1) {
    return InvalidArgument("Triton only supports 1 dimensional List of String as " + kind +
                           " for '" + b.name + "' for model '" + model_name + "'");
  }
  return Status::Ok();
}

// Triton's error when a model has implicit state but its tensors do not all use <name>__<index>.
Status StateNamingError(const std::string& model_name) {
  return InvalidArgument("PyTorch model '" + model_name +
                         "' is using sequence batching with state but not all inputs and outputs "
                         "follow the <name>__<index> naming convention");
}

std::vector<int64_t> WithBatch(const std::vector<int64_t>& dims, int64_t max_batch_size) {
  std::vector<int64_t> shape;
  if (max_batch_size > 0) shape.push_back(-1);
  shape.insert(shape.end(), dims.begin(), dims.end());
  return shape;
}

bool AllNamedIndex(const std::vector<IoConfig>& ios) {
  return std::all_of(ios.begin(), ios.end(),
                     [](const IoConfig& io) { return NamedIndex(io.name).has_value(); });
}

bool IsArgument(const ForwardSignature& sig, const std::string& name) {
  return std::any_of(sig.arguments.begin(), sig.arguments.end(),
                     [&](const auto& a) { return a.name == name; });
}

// The first tensor that does not follow `<name>__<index>` (Triton names it in its warning).
const IoConfig& FirstUnindexed(const std::vector<IoConfig>& ios) {
  return *std::find_if(ios.begin(), ios.end(),
                       [](const IoConfig& io) { return !NamedIndex(io.name).has_value(); });
}

// Collects the module's argument names; errors on argument types Triton rejects.
Status CheckArguments(const std::string& model_name, const ForwardSignature& sig, IoPlan* plan) {
  const auto& args = sig.arguments;
  if (args.size() == 1 && args[0].kind == ValueKind::kTensorDict) {
    plan->dict_input = true;
    return Status::Ok();
  }
  for (const auto& a : args) {
    if (a.kind == ValueKind::kTensorDict) {
      return InvalidArgument(
          LoadError(model_name,
                    "multiple inputs of kind DictType were detected. Only a single input of "
                    "type Dict(str, Tensor) is supported"));
    }
    if (a.kind != ValueKind::kTensor && a.kind != ValueKind::kStringList) {
      return InvalidArgument(LoadError(
          model_name, "an input of type '" + a.type +
                          "' was detected in the model. Only a single input of type Dict(str, "
                          "Tensor) or input(s) of type Tensor or List[str] are supported"));
    }
  }
  return Status::Ok();
}

// The forward argument input `name` binds to, under the convention PlanInputs chose (one that
// every input follows; never kDictKey).
size_t InputIndex(const ForwardSignature& sig, NamingConvention convention,
                  const std::string& name) {
  if (convention == NamingConvention::kNamedIndex) return *NamedIndex(name);
  const auto& args = sig.arguments;
  return std::find_if(args.begin(), args.end(), [&](const auto& a) { return a.name == name; }) -
         args.begin();
}

// The configured inputs, then one flat input per batch input target.
std::vector<IoConfig> ArgumentInputs(const ModelConfig& config) {
  std::vector<IoConfig> inputs = config.inputs;
  for (const BatchInputConfig& bi : config.batch_inputs) {
    for (const std::string& target : bi.target_names) {
      IoConfig io;
      io.name = target;
      io.data_type = bi.data_type;
      io.dims = {-1};
      io.ragged = true;  // passed as is, no batch dimension
      inputs.push_back(std::move(io));
    }
  }
  return inputs;
}

Status PlanInputs(const std::string& model_name, const TorchModelConfig& config,
                  const ForwardSignature& sig, IoPlan* plan) {
  const int64_t mbs = config.base.max_batch_size;
  const std::vector<IoConfig> inputs = ArgumentInputs(config.base);
  const bool by_argument = std::all_of(
      inputs.begin(), inputs.end(), [&](const IoConfig& io) { return IsArgument(sig, io.name); });
  if (plan->dict_input) {
    plan->input_convention = NamingConvention::kDictKey;
  } else if (by_argument) {
    plan->input_convention = NamingConvention::kForwardArgument;
  } else if (AllNamedIndex(inputs)) {
    plan->input_convention = NamingConvention::kNamedIndex;
  } else {
    plan->input_convention = NamingConvention::kStrictConfigOrdering;
    plan->warnings.push_back(
        "input '" + FirstUnindexed(inputs).name +
        "' or previous input(s) are neither an input argument to the model '" + model_name +
        "' nor do they follow the <name>__<index> naming convention. Falling back to enforcing "
        "strict ordering from model configuration.");
  }
  if (!config.state_inputs.empty() && !plan->dict_input &&
      plan->input_convention != NamingConvention::kNamedIndex) {
    return StateNamingError(model_name);
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    Binding b{inputs[i].name, inputs[i].data_type, i, ModelSideShape(inputs[i], mbs)};
    if (!plan->dict_input && plan->input_convention != NamingConvention::kStrictConfigOrdering) {
      b.index = InputIndex(sig, plan->input_convention, b.name);
    }
    NEREID_RETURN_IF_ERROR(CheckTensor(model_name, "input", b));
    plan->inputs.push_back(std::move(b));
  }
  // Controls and states always use <name>__<index>, whatever the configured inputs use.
  auto add_sequence = [&](const SequenceTensor& t, const char* kind) -> Status {
    Binding b{t.name, t.data_type, plan->inputs.size(), WithBatch(t.dims, mbs)};
    if (!plan->dict_input) {
      std::optional<size_t> index = NamedIndex(t.name);
      if (!index) {
        return InvalidArgument(LoadError(model_name, std::string(kind) + " '" + t.name +
                                                         "' does not follow the <name>__<index> "
                                                         "naming convention"));
      }
      b.index = *index;
    }
    NEREID_RETURN_IF_ERROR(CheckTensor(model_name, "input", b));
    plan->inputs.push_back(std::move(b));
    return Status::Ok();
  };
  for (const auto& t : config.controls) NEREID_RETURN_IF_ERROR(add_sequence(t, "control input"));
  for (const auto& t : config.state_inputs) NEREID_RETURN_IF_ERROR(add_sequence(t, "state input"));
  return Status::Ok();
}

// Every input has its own argument, of the kind its datatype needs.
Status CheckInputArguments(const std::string& model_name, const ForwardSignature& sig,
                           const IoPlan& plan) {
  if (plan.dict_input) {
    for (const Binding& b : plan.inputs) {
      if (b.data_type == DataType::kBytes) {
        return InvalidArgument(LoadError(model_name, "input '" + b.name +
                                                         "' is TYPE_STRING, which a Dict(str, "
                                                         "Tensor) forward argument cannot hold"));
      }
    }
    return Status::Ok();
  }
  std::vector<const Binding*> owner(plan.argument_count, nullptr);
  for (const Binding& b : plan.inputs) {
    if (b.index >= plan.argument_count) {
      return InvalidArgument(
          LoadError(model_name, "input '" + b.name + "' refers to forward argument " +
                                    std::to_string(b.index) + ", but the model's forward takes " +
                                    std::to_string(plan.argument_count) + " arguments"));
    }
    if (owner[b.index] != nullptr) {
      return InvalidArgument(
          LoadError(model_name, "inputs '" + owner[b.index]->name + "' and '" + b.name +
                                    "' both refer to forward argument " + std::to_string(b.index)));
    }
    owner[b.index] = &b;
    const auto& arg = sig.arguments[b.index];
    const bool wants_list = b.data_type == DataType::kBytes;
    if (wants_list != (arg.kind == ValueKind::kStringList)) {
      return InvalidArgument(LoadError(
          model_name, "input '" + b.name + "' (" + std::string(DataTypeConfigName(b.data_type)) +
                          ") is passed as forward "
                          "argument '" +
                          arg.name + "' of type " + arg.type + "; TYPE_STRING " +
                          "inputs need List[str] and other types need Tensor"));
    }
  }
  return Status::Ok();
}

Status PlanOutputs(const std::string& model_name, const TorchModelConfig& config,
                   const ForwardSignature& sig, IoPlan* plan) {
  const int64_t mbs = config.base.max_batch_size;
  const auto& outputs = config.base.outputs;
  if (!AllNamedIndex(outputs)) {
    if (!config.state_outputs.empty()) return StateNamingError(model_name);
    plan->output_convention = NamingConvention::kStrictConfigOrdering;
    plan->warnings.push_back("output '" + FirstUnindexed(outputs).name +
                             "' or previous output(s) of the model '" + model_name +
                             "' do not follow the <name>__<index> naming convention. Falling "
                             "back to enforcing strict ordering from model configuration.");
  }
  const bool by_order = plan->output_convention == NamingConvention::kStrictConfigOrdering;
  for (size_t i = 0; i < outputs.size(); ++i) {
    Binding b{outputs[i].name, outputs[i].data_type, i, ModelSideShape(outputs[i], mbs)};
    b.index = by_order ? i : *NamedIndex(b.name);
    b.scatter = config.base.IsBatchOutput(b.name);
    NEREID_RETURN_IF_ERROR(CheckTensor(model_name, "output", b));
    plan->outputs.push_back(std::move(b));
  }
  for (const SequenceTensor& t : config.state_outputs) {
    const bool configured = std::any_of(outputs.begin(), outputs.end(),
                                        [&](const IoConfig& io) { return io.name == t.name; });
    if (configured) continue;
    std::optional<size_t> index = NamedIndex(t.name);
    if (!index) {
      return InvalidArgument(
          LoadError(model_name, "state output '" + t.name +
                                    "' does not follow the <name>__<index> naming "
                                    "convention"));
    }
    Binding b{t.name, t.data_type, *index, WithBatch(t.dims, mbs)};
    NEREID_RETURN_IF_ERROR(CheckTensor(model_name, "output", b));
    plan->outputs.push_back(std::move(b));
  }
  return Status::Ok();
}

std::string KindName(ValueKind kind) {
  switch (kind) {
    case ValueKind::kTensor:
      return "Tensor";
    case ValueKind::kStringList:
      return "List[str]";
    case ValueKind::kTensorDict:
      return "Dict(str, Tensor)";
    case ValueKind::kAny:
      return "Any";
    case ValueKind::kOther:
      break;
  }
  return "another type";
}

Status CheckReturns(const std::string& model_name, const ForwardSignature& sig, IoPlan* plan) {
  const std::string allowed = "; outputs must be Tensor, List[str] or a Tuple of them";
  if (!sig.returns_tuple && sig.returns.size() == 1 && sig.returns[0] == ValueKind::kAny) {
    return Status::Ok();  // only known per call
  }
  for (ValueKind kind : sig.returns) {
    if (kind != ValueKind::kTensor && kind != ValueKind::kStringList && kind != ValueKind::kAny) {
      return InvalidArgument(
          LoadError(model_name, "the model's forward returns " + sig.return_type + allowed));
    }
  }
  plan->return_count = sig.returns.size();
  for (const Binding& b : plan->outputs) {
    if (b.index >= sig.returns.size()) {
      return InvalidArgument(
          LoadError(model_name, "output '" + b.name + "' refers to output index " +
                                    std::to_string(b.index) + ", but the model's forward returns " +
                                    std::to_string(sig.returns.size()) + " value(s) (" +
                                    sig.return_type + ")"));
    }
    const ValueKind kind = sig.returns[b.index];
    if (kind == ValueKind::kAny) continue;
    if ((b.data_type == DataType::kBytes) != (kind == ValueKind::kStringList)) {
      return InvalidArgument(LoadError(
          model_name, "output '" + b.name + "' (" + std::string(DataTypeConfigName(b.data_type)) +
                          ") is returned as " + KindName(kind) +
                          "; TYPE_STRING outputs need List[str] and other types need Tensor"));
    }
  }
  return Status::Ok();
}

}  // namespace

std::optional<size_t> NamedIndex(const std::string& name) {
  const size_t pos = name.find("__");
  if (pos == std::string::npos) return std::nullopt;
  const std::string digits = name.substr(pos + 2);
  if (digits.empty() || digits.size() > 9) return std::nullopt;
  for (char c : digits) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
  }
  return static_cast<size_t>(std::stoul(digits));
}

StatusOr<IoPlan> PlanModelIo(const std::string& model_name, const TorchModelConfig& config,
                             const ForwardSignature& signature) {
  if (config.base.inputs.empty()) {
    return InvalidArgument(
        "model configuration must contain at least one input, none were specified.");
  }
  if (config.base.outputs.empty()) {
    return InvalidArgument(
        "model configuration must contain at least one output, none were specified.");
  }
  IoPlan plan;
  NEREID_RETURN_IF_ERROR(CheckArguments(model_name, signature, &plan));
  plan.argument_count = signature.arguments.size();
  size_t batch_targets = 0;
  for (const BatchInputConfig& bi : config.base.batch_inputs) {
    batch_targets += bi.target_names.size();
  }
  const size_t expected = config.base.inputs.size() + batch_targets + config.controls.size() +
                          config.state_inputs.size();
  if (!plan.dict_input && plan.argument_count != expected) {
    return InvalidArgument(LoadError(
        model_name, "configuration expects " + std::to_string(expected) +
                        " inputs, model provides " + std::to_string(plan.argument_count)));
  }
  NEREID_RETURN_IF_ERROR(PlanInputs(model_name, config, signature, &plan));
  NEREID_RETURN_IF_ERROR(CheckInputArguments(model_name, signature, plan));
  NEREID_RETURN_IF_ERROR(PlanOutputs(model_name, config, signature, &plan));
  NEREID_RETURN_IF_ERROR(CheckReturns(model_name, signature, &plan));
  return plan;
}

}  // namespace nereid::backends::pytorch
