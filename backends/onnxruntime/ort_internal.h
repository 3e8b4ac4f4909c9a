// Internal to the onnxruntime plugin: the only header that includes ONNX Runtime, shared by its
// ORT translation units (ort_backend.cc: backend, model load, sessions; ort_instance.cc:
// execution; ort_staged.cc: the bound runs of small tensors). Keep the ORT-including translation
// units few: the header is heavy to compile.
#pragma once

#include <onnxruntime_cxx_api.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "nereid/backend_api.h"
#include "nereid/data_type.h"

namespace nereid::backends::ort {

// ORT element type <-> DataType. FromOrtType returns nullopt for types Nereid has no name for
// (complex, float8, int4, ...). ToOrtType returns UNDEFINED for kInvalid.
std::optional<DataType> FromOrtType(ONNXTensorElementDataType type);
ONNXTensorElementDataType ToOrtType(DataType type);

// What an instance needs to run a model; built once at load, immutable, shared by the instances.
struct ExecutionPlan {
  struct Tensor {
    std::string name;
    DataType data_type = DataType::kInvalid;
    ONNXTensorElementDataType ort_type = ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
    // Outputs only: true when the shape ORT produces is known before Run, so the output can be
    // written straight into memory given to ORT: a numeric output that is not a batch output, not
    // a model input passed straight through (ORT leaves a preallocated buffer of such an output
    // unwritten) and whose model dims are static except the batch dimension of a batching model.
    bool fixed_shape = false;
    std::vector<int64_t> dims;  // the model's dims, -1 where dynamic (outputs only)
  };
  std::string model_name;
  bool batching = false;        // max_batch_size > 0
  std::vector<Tensor> inputs;   // configured inputs, config order
  std::vector<Tensor> outputs;  // configured outputs, config order
};

// The shape output `spec` has in an execution of `batch_size` rows (the batch dimension filled
// in), or false when it is not known before Run (spec.fixed_shape unset, no batch size).
bool FixedOutputShape(const ExecutionPlan::Tensor& spec, int64_t batch_size,
                      std::vector<int64_t>* shape);

// INTERNAL "onnxruntime execute failure: short output buffer": the core gave less memory for an
// output than asked.
Status ShortOutputBuffer();

// An input of one execution after the plugin's checks: its plan entry and the request's tensor.
struct CheckedInput {
  size_t spec = 0;  // index into ExecutionPlan::inputs
  const backend::TensorRef* tensor = nullptr;
};

// A selected output of one execution; `shape` and `byte_size` are set when `known` (its shape
// is known before Run).
struct PlannedOutput {
  size_t spec = 0;  // index into ExecutionPlan::outputs
  bool known = false;
  std::vector<int64_t> shape;
  size_t byte_size = 0;
};

// Runs small numeric executions whose output shapes are known before Run through IoBindings made
// once per signature (inputs and their shapes, requested outputs): the bound OrtValues sit over
// buffers this object owns, the request's inputs are copied in and the outputs copied out to
// the core's memory. For tensors this small the copies cost less than what ORT does per call
// for each new OrtValue and for unbound feeds and fetches (bench/README.md, "ortbind").
// Keeps up to kMaxEntries signatures (a batcher's batch sizes), replacing the least recently
// used. Not thread-safe: owned by one instance.
class StagedRunner {
 public:
  static constexpr size_t kMaxBytes = 16 * 1024;  // inputs + outputs of one execution
  static constexpr size_t kMaxEntries = 8;

  StagedRunner();
  ~StagedRunner();
  StagedRunner(const StagedRunner&) = delete;
  StagedRunner& operator=(const StagedRunner&) = delete;

  // Runs `session` on `inputs` (numeric, each plan input at most once) and writes `outputs`
  // through `allocator`. Ort::Exception propagates to the caller.
  Status Run(const ExecutionPlan& plan, Ort::Session& session, const Ort::RunOptions& run_options,
             std::span<const CheckedInput> inputs, std::span<const PlannedOutput> outputs,
             const backend::ExecuteArgs& args);

 private:
  struct Entry;
  Entry& Find(const ExecutionPlan& plan, Ort::Session& session,
              std::span<const CheckedInput> inputs, std::span<const PlannedOutput> outputs);

  std::vector<std::unique_ptr<Entry>> entries_;
  uint64_t clock_ = 0;
};

// Makes an instance that runs `session` (not thread-safe, like every ModelInstance). `env` is kept
// alive as long as the instance because sessions must not outlive the ORT environment.
std::unique_ptr<backend::ModelInstance> MakeOrtInstance(std::shared_ptr<const ExecutionPlan> plan,
                                                        std::shared_ptr<Ort::Env> env,
                                                        Ort::Session session);

}  // namespace nereid::backends::ort
