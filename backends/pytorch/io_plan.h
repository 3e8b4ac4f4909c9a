// How the tensors of a model configuration map onto a TorchScript module's forward arguments and
// return values, following Triton's PyTorch backend:
//
// Inputs: when every configured input name is a forward argument name, by name
// (FORWARD_ARGUMENT); else when every name is `<name>__<index>`, by that index (NAMED_INDEX); else
// in configuration order, the i-th configured input on the i-th argument (Triton's
// STRICT_CONFIG_ORDERING fallback, with a warning; ADR 0005). A forward taking a single
// Dict[str, Tensor] gets every input in that dict, keyed by name. Sequence control inputs and
// implicit-state tensors must be `<name>__<index>`: they are ordinary arguments and outputs here.
// Outputs: by `<name>__<index>` when every output follows it, else in configuration order (with a
// warning). The argument count must equal the number of configured inputs (Triton's error).
// Batch inputs (config `batch_input`, computed by the core) are more arguments, named by their
// target names and following the configured inputs' convention (after them in configuration
// order); ragged inputs arrive flat ([-1]).
//
// Beyond Triton, inconsistencies that would fail every request are load errors here: an index
// past the arguments or return values, two tensors on one argument, a TYPE_STRING tensor on a
// Tensor argument (or the reverse), a forward that returns something other than Tensor, List[str]
// or a tuple of them.
//
// Pure code without LibTorch (the runtime describes the module as a ForwardSignature);
// stateless and thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "nereid/data_type.h"
#include "nereid/status.h"
#include "pytorch/torch_config.h"

namespace nereid::backends::pytorch {

// What a TorchScript value type is, as far as the mapping cares.
enum class ValueKind { kTensor, kStringList, kTensorDict, kAny, kOther };

struct ForwardSignature {
  struct Argument {
    std::string name;
    ValueKind kind = ValueKind::kOther;
    std::string type;  // TorchScript spelling, for messages
  };
  std::vector<Argument> arguments;  // without `self`
  // The return type: one value, or the elements of a tuple. `returns_tuple` tells which.
  bool returns_tuple = false;
  std::vector<ValueKind> returns;
  std::string return_type;  // TorchScript spelling, for messages
};

enum class NamingConvention { kForwardArgument, kNamedIndex, kStrictConfigOrdering, kDictKey };

struct Binding {
  std::string name;
  DataType data_type = DataType::kInvalid;
  size_t index = 0;            // forward argument (inputs) or returned value (outputs)
  std::vector<int64_t> shape;  // model-side shape: reshape or dims, -1 batch dim first if batching
  bool scatter = false;        // a batch_output target: its shape is the requests' (core checks)
};

struct IoPlan {
  bool dict_input = false;  // forward(self, Dict[str, Tensor])
  size_t argument_count = 0;
  NamingConvention input_convention = NamingConvention::kForwardArgument;
  NamingConvention output_convention = NamingConvention::kNamedIndex;
  // Configured inputs, then batch input targets, then control inputs, then state inputs.
  std::vector<Binding> inputs;
  // Configured outputs, then state outputs that are not also configured outputs.
  std::vector<Binding> outputs;
  // Number of values forward returns, when the return type says it (a tuple or one value).
  std::optional<size_t> return_count;
  // Triton's warnings for the configuration-order fallback, for the caller to log.
  std::vector<std::string> warnings;
};

// Errors are InvalidArgument (Triton's wording where Triton has one) and name the model.
StatusOr<IoPlan> PlanModelIo(const std::string& model_name, const TorchModelConfig& config,
                             const ForwardSignature& signature);

// The index in `<name>__<index>` (Triton: the digits after the first "__"), or nullopt.
std::optional<size_t> NamedIndex(const std::string& name);

}  // namespace nereid::backends::pytorch
