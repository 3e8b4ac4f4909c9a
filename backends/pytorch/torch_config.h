// What the pytorch backend reads from a model configuration beyond backends/common: the sequence
// batcher's control inputs and implicit-state tensors (which reach a TorchScript model as ordinary
// forward arguments and outputs), and Triton's PyTorch backend parameters. Pure code without
// LibTorch, so it is unit-testable; read once at load. Values are immutable and thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/config_reader.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid::backends::pytorch {

// A tensor the sequence batcher adds to a request: a control input (START, END, READY, CORRID) or
// the input or output side of an implicit state.
struct SequenceTensor {
  std::string name;
  DataType data_type = DataType::kInvalid;
  std::vector<int64_t> dims;  // without the batch dimension
};

struct TorchModelConfig {
  ModelConfig base;
  std::vector<SequenceTensor> controls;       // sequence_batching.control_input[].name
  std::vector<SequenceTensor> state_inputs;   // sequence_batching.state[].input_name
  std::vector<SequenceTensor> state_outputs;  // sequence_batching.state[].output_name
};

// Parses the JSON configuration. Errors are InvalidArgument naming the field.
StatusOr<TorchModelConfig> ParseTorchModelConfig(std::string_view json);

// Triton's PyTorch backend parameters that apply on CPU (config `parameters`, upper-case keys as in
// Triton). Booleans take true/false/1/0/on/off; a value that does not parse fails the load.
struct TorchSettings {
  bool optimized_execution = true;  // !DISABLE_OPTIMIZED_EXECUTION (per executing thread)
  bool inference_mode = true;       // INFERENCE_MODE; false -> NoGradGuard instead
  // ENABLE_JIT_EXECUTOR / ENABLE_JIT_PROFILING / ENABLE_TENSOR_FUSER: libtorch keeps these
  // process-wide; unset means "leave libtorch's value alone", as in Triton.
  std::optional<bool> jit_executor;
  std::optional<bool> jit_profiling;
  std::optional<bool> tensor_fuser;
  bool weight_sharing = false;  // ENABLE_WEIGHT_SHARING: instances share one module
  // INTRA_OP_THREAD_COUNT: OpenMP threads each instance's forward may use; 0 = libtorch's default
  // (one per physical core or OMP_NUM_THREADS; the runtime substitutes the number at load). Applied
  // to the thread that runs forward, so it is per instance.
  int intra_op_threads = 1;
  // INTER_OP_THREAD_COUNT: libtorch's process-wide inter-op pool (torch.jit.fork); the first value
  // the process applies wins.
  std::optional<int> inter_op_threads;
};

StatusOr<TorchSettings> ReadTorchSettings(const ModelConfig& config);

// True for the datatypes a TorchScript model can take or return: BOOL, UINT8, INT8, INT16, INT32,
// INT64, FP16, FP32, FP64, BF16 as tensors and BYTES (TYPE_STRING) as List[str].
bool TorchSupports(DataType type);

}  // namespace nereid::backends::pytorch
