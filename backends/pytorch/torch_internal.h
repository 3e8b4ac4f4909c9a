// Internal to the pytorch runtime library: the only header that includes LibTorch, shared by its
// two LibTorch translation units (torch_runtime.cc: runtime backend, module load, signature,
// process-wide settings; torch_instance.cc: execution). Keep LibTorch-including translation
// units at these two: each costs about 10 s of CPU to compile.
#pragma once

// ivalue.h first: <torch/script.h> alone makes clang (not gcc) instantiate, in C++20,
// std::vector<c10::IValue> members while IValue is still incomplete, which fails.
#include <ATen/core/ivalue.h>
#include <torch/script.h>

#include <memory>
#include <optional>
#include <string>

#include "nereid/backend_api.h"
#include "pytorch/io_plan.h"
#include "pytorch/runtime_api.h"
#include "pytorch/torch_config.h"

namespace nereid::backends::pytorch {

// DataType <-> torch scalar type; nullopt for types LibTorch lacks (UINT16/32/64) and BYTES
// (List[str], not a tensor).
std::optional<at::ScalarType> ToTorchType(DataType type);
std::optional<DataType> FromTorchType(at::ScalarType type);

// What an instance needs to run a model; built once at load, immutable, shared by the instances.
struct ExecutionPlan {
  std::string model_name;
  int64_t max_batch_size = 0;
  IoPlan io;
  TorchSettings settings;
  backend::LogFunction log;
};

// Settles libtorch's process-wide inter-op pool size once: the first model load that names
// INTER_OP_THREAD_COUNT sets it, and the first execution sets 1 when nobody has. Thread-safe.
void SettleInterOpThreads(std::optional<int> requested, const std::string& model_name,
                          const backend::LogFunction& log);

// Makes an instance that runs `module` (not thread-safe, like every ModelInstance). With weight
// sharing several instances hold the same module; TorchScript's forward may run concurrently.
std::unique_ptr<backend::ModelInstance> MakeTorchInstance(
    std::shared_ptr<const ExecutionPlan> plan, std::shared_ptr<torch::jit::Module> module);

}  // namespace nereid::backends::pytorch
