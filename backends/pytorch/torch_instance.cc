// Execution of one TorchScript module: request memory in (wrapped, not copied), core-provided
// memory out (one copy per output).
//
// A TorchInstance owns per-call scratch, so it is not thread-safe: the core calls Execute on one
// instance from one thread at a time (backend_api.h), though not always the same thread (inline
// execution, docs/adr/0003), which is why the per-thread libtorch settings (OpenMP intra-op
// threads, graph-executor optimisation) are applied on every call. After an error the instance
// stays usable: scratch is reset at the start of every call.
#include <ATen/Parallel.h>
#include <torch/csrc/jit/passes/tensorexpr_fuser.h>
#include <torch/csrc/jit/python/update_graph_executor_opt.h>
#include <torch/csrc/jit/runtime/graph_executor.h>

#include <cstring>
#include <exception>

#include "common/config_reader.h"
#include "common/tensor_util.h"
#include "pytorch/torch_internal.h"

namespace nereid::backends::pytorch {
namespace {

constexpr std::string_view kFailure = "PyTorch execute failure: ";

Status InputError(const std::string& detail) {
  return InvalidArgument(std::string(kFailure) + detail);
}

std::string TypeName(DataType type) { return std::string(DataTypeConfigName(type)); }

class TorchInstance final : public backend::ModelInstance {
 public:
  TorchInstance(std::shared_ptr<const ExecutionPlan> plan,
                std::shared_ptr<torch::jit::Module> module)
      : plan_(std::move(plan)), module_(std::move(module)) {
    arguments_.reserve(plan_->io.argument_count);
  }

  Status Execute(const backend::ExecuteArgs& args) override {
    Status status;
    try {
      status = Run(args);
    } catch (const c10::Error& e) {
      status = Internal(std::string(kFailure) + e.what_without_backtrace());
    } catch (const std::exception& e) {
      status = Internal(std::string(kFailure) + e.what());
    } catch (...) {
      status = Internal(std::string(kFailure) + "unknown exception");
    }
    arguments_.clear();  // drop the tensors wrapping request memory
    results_.clear();
    return status;
  }

 private:
  void ApplyThreadSettings();
  Status Run(const backend::ExecuteArgs& args);
  Status AddInput(const backend::TensorRef& tensor, c10::Dict<std::string, at::Tensor>* dict);
  Status WriteOutput(const Binding& spec, const c10::IValue& value, int64_t batch_size,
                     backend::OutputAllocator& allocator);
  Status WriteTensor(const Binding& spec, const at::Tensor& value, int64_t batch_size,
                     backend::OutputAllocator& allocator);
  Status WriteStrings(const Binding& spec, const c10::List<c10::IValue>& list, int64_t batch_size,
                      backend::OutputAllocator& allocator);

  const std::shared_ptr<const ExecutionPlan> plan_;
  const std::shared_ptr<torch::jit::Module> module_;
  // Per-Execute scratch, reused across calls.
  std::vector<c10::IValue> arguments_;
  std::vector<bool> filled_;
  std::vector<std::string_view> elements_;
  std::vector<c10::IValue> results_;
};

void TorchInstance::ApplyThreadSettings() {
  const TorchSettings& s = plan_->settings;
  SettleInterOpThreads(std::nullopt, plan_->model_name, plan_->log);
  // OpenMP keeps the team size per calling thread; at::set_num_threads sets it for this thread.
  if (at::get_num_threads() != s.intra_op_threads) {
    at::set_num_threads(s.intra_op_threads);
  }
  torch::jit::setGraphExecutorOptimize(s.optimized_execution);  // thread-local in libtorch
  // Process-wide in libtorch; set only when the model names them, as Triton does.
  if (s.jit_profiling) torch::jit::getProfilingMode() = *s.jit_profiling;
  if (s.jit_executor) torch::jit::getExecutorMode() = *s.jit_executor;
  if (s.tensor_fuser) torch::jit::setTensorExprFuserEnabled(*s.tensor_fuser);
}

Status TorchInstance::Run(const backend::ExecuteArgs& args) {
  if (args.outputs == nullptr) return InputError("no output allocator");
  ApplyThreadSettings();
  // Inference mode (or no-grad when INFERENCE_MODE is false) for everything below, inputs too.
  c10::InferenceMode inference(plan_->settings.inference_mode);
  torch::NoGradGuard no_grad;

  const IoPlan& io = plan_->io;
  arguments_.assign(io.dict_input ? 1 : io.argument_count, c10::IValue());
  filled_.assign(io.inputs.size(), false);
  c10::Dict<std::string, at::Tensor> dict;
  for (const backend::TensorRef& tensor : args.inputs) {
    NEREID_RETURN_IF_ERROR(AddInput(tensor, &dict));
  }
  for (size_t i = 0; i < io.inputs.size(); ++i) {
    if (!filled_[i]) return InputError("input '" + io.inputs[i].name + "' is missing");
  }
  if (io.dict_input) arguments_[0] = std::move(dict);

  if (args.times != nullptr) args.times->input_end_ns = backend::ExecuteClockNs();
  c10::IValue result = module_->forward(arguments_);
  if (args.times != nullptr) args.times->output_start_ns = backend::ExecuteClockNs();
  arguments_.clear();

  results_.clear();
  if (result.isTuple()) {
    for (const c10::IValue& v : result.toTupleRef().elements()) results_.push_back(v);
  } else if (result.isTensor() || result.isList()) {
    results_.push_back(std::move(result));
  } else {
    return Internal(std::string(kFailure) +
                    "output must be of type Tensor, List[str] or Tuple containing one of these "
                    "two types. It should not be a List / Dictionary of Tensors or a Scalar");
  }

  bool any_requested = false;
  for (const Binding& out : io.outputs) any_requested |= args.outputs->IsRequested(out.name);
  for (const Binding& out : io.outputs) {
    if (any_requested && !args.outputs->IsRequested(out.name)) continue;
    if (out.index >= results_.size()) {
      return InvalidArgument("The output " + out.name +
                             " in the model configuration refers to an output index which "
                             "doesn't exist. This model has " +
                             std::to_string(results_.size()) + " outputs");
    }
    NEREID_RETURN_IF_ERROR(WriteOutput(out, results_[out.index], args.batch_size, *args.outputs));
  }
  results_.clear();
  return Status::Ok();
}

Status TorchInstance::AddInput(const backend::TensorRef& tensor,
                               c10::Dict<std::string, at::Tensor>* dict) {
  const IoPlan& io = plan_->io;
  size_t k = 0;
  while (k < io.inputs.size() && io.inputs[k].name != tensor.name) ++k;
  if (k == io.inputs.size())
    return InputError("unexpected input '" + std::string(tensor.name) + "'");
  const Binding& spec = io.inputs[k];
  if (tensor.data_type != spec.data_type) {
    return InputError("input '" + spec.name + "' has datatype " +
                      std::string(DataTypeWireName(tensor.data_type)) + ", expected " +
                      std::string(DataTypeWireName(spec.data_type)));
  }
  const std::optional<size_t> count = ElementCount(tensor.shape);
  if (!count) return InputError("input '" + spec.name + "' has an invalid shape");
  filled_[k] = true;
  if (spec.data_type == DataType::kBytes) {
    Status split = SplitBytesElements(tensor.data, *count, &elements_);
    if (!split.ok()) return InputError("input '" + spec.name + "': " + split.message());
    c10::List<std::string> list;
    list.reserve(elements_.size());
    for (std::string_view e : elements_) list.push_back(std::string(e));
    arguments_[spec.index] = std::move(list);
    return Status::Ok();
  }
  const size_t element_size = DataTypeByteSize(spec.data_type);
  if (*count > tensor.data.size() / element_size || *count * element_size != tensor.data.size()) {
    return InputError("input '" + spec.name + "' holds " + std::to_string(tensor.data.size()) +
                      " bytes, shape " + ShapeToString(tensor.shape) + " needs " +
                      std::to_string(*count) + " elements of " + std::to_string(element_size));
  }
  const auto options = at::TensorOptions().dtype(*ToTorchType(spec.data_type)).device(at::kCPU);
  const c10::IntArrayRef shape(tensor.shape.data(), tensor.shape.size());
  // The request owns the memory and outlives forward; a zero-size tensor gets its own storage.
  at::Tensor value = tensor.data.empty()
                         ? at::empty(shape, options)
                         : at::from_blob(const_cast<char*>(tensor.data.data()), shape, options);
  if (io.dict_input) {
    dict->insert(spec.name, std::move(value));
  } else {
    arguments_[spec.index] = std::move(value);
  }
  return Status::Ok();
}

// The model-side shape allows `shape`: same rank, fixed dimensions equal, the batch dimension
// equal to the request's batch size.
bool ShapeMatches(const std::vector<int64_t>& expected, c10::IntArrayRef shape, bool batching,
                  int64_t batch_size) {
  if (expected.size() != shape.size()) return false;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i == 0 && batching && shape[0] != batch_size) return false;
    if (expected[i] >= 0 && expected[i] != shape[i]) return false;
  }
  return true;
}

Status ShapeError(const Binding& spec, c10::IntArrayRef shape, bool batching, int64_t batch) {
  return InvalidArgument(std::string(kFailure) + "output '" + spec.name + "' has shape " +
                         ShapeToString(std::span<const int64_t>(shape.data(), shape.size())) +
                         ", the model configuration expects " + ShapeToString(spec.shape) +
                         (batching ? " with batch size " + std::to_string(batch) : ""));
}

Status TorchInstance::WriteOutput(const Binding& spec, const c10::IValue& value, int64_t batch_size,
                                  backend::OutputAllocator& allocator) {
  if (value.isTensor() && spec.data_type != DataType::kBytes) {
    return WriteTensor(spec, value.toTensor(), batch_size, allocator);
  }
  if (value.isList() && spec.data_type == DataType::kBytes) {
    return WriteStrings(spec, value.toList(), batch_size, allocator);
  }
  const std::string got = value.isTensor() ? "a Tensor"
                          : value.isList() ? "a List"
                                           : "another type";
  return InvalidArgument(std::string(kFailure) + "output '" + spec.name + "' (" +
                         TypeName(spec.data_type) + ") must be " +
                         (spec.data_type == DataType::kBytes ? "a List[str]" : "a Tensor") +
                         ", the model returned " + got);
}

Status TorchInstance::WriteTensor(const Binding& spec, const at::Tensor& value, int64_t batch_size,
                                  backend::OutputAllocator& allocator) {
  const std::optional<DataType> type = FromTorchType(value.scalar_type());
  if (type != spec.data_type) {
    return InvalidArgument(
        "configuration expects datatype " + TypeName(spec.data_type) + " for output '" + spec.name +
        "', model provides " +
        (type ? TypeName(*type) : std::string(c10::toString(value.scalar_type()))));
  }
  const bool batching = plan_->max_batch_size > 0;
  if (!spec.scatter && !ShapeMatches(spec.shape, value.sizes(), batching, batch_size)) {
    return ShapeError(spec, value.sizes(), batching, batch_size);
  }
  const at::Tensor dense = value.device().is_cpu() ? value.contiguous() : value.cpu().contiguous();
  const size_t byte_size = dense.numel() * DataTypeByteSize(spec.data_type);
  const std::span<const int64_t> shape(dense.sizes().data(), dense.sizes().size());
  NEREID_ASSIGN_OR_RETURN(std::span<char> dst,
                          allocator.Allocate(spec.name, spec.data_type, shape, byte_size));
  if (dst.size() < byte_size) return Internal(std::string(kFailure) + "short output buffer");
  if (byte_size > 0) std::memcpy(dst.data(), dense.data_ptr(), byte_size);
  return Status::Ok();
}

Status TorchInstance::WriteStrings(const Binding& spec, const c10::List<c10::IValue>& list,
                                   int64_t batch_size, backend::OutputAllocator& allocator) {
  const int64_t n = static_cast<int64_t>(list.size());
  const bool batching = plan_->max_batch_size > 0;
  const std::vector<int64_t> shape{n};
  if (!spec.scatter && !ShapeMatches(spec.shape, c10::IntArrayRef(shape), batching, batch_size)) {
    return ShapeError(spec, c10::IntArrayRef(shape), batching, batch_size);
  }
  size_t byte_size = 0;
  for (size_t i = 0; i < list.size(); ++i) {
    const c10::IValue element = list.get(i);
    if (!element.isString()) {
      return InvalidArgument(std::string(kFailure) + "output '" + spec.name +
                             "' must be a List[str], an element is " + element.tagKind());
    }
    const size_t length = element.toStringRef().size();
    if (length > UINT32_MAX) return Internal(std::string(kFailure) + "string too long");
    byte_size += kBytesLengthPrefix + length;
  }
  NEREID_ASSIGN_OR_RETURN(std::span<char> dst,
                          allocator.Allocate(spec.name, DataType::kBytes, shape, byte_size));
  if (dst.size() < byte_size) return Internal(std::string(kFailure) + "short output buffer");
  char* p = dst.data();
  for (size_t i = 0; i < list.size(); ++i) {
    const c10::IValue element = list.get(i);
    const std::string& s = element.toStringRef();
    WriteBytesLength(static_cast<uint32_t>(s.size()), p);
    p += kBytesLengthPrefix;
    if (!s.empty()) std::memcpy(p, s.data(), s.size());
    p += s.size();
  }
  return Status::Ok();
}

}  // namespace

std::unique_ptr<backend::ModelInstance> MakeTorchInstance(
    std::shared_ptr<const ExecutionPlan> plan, std::shared_ptr<torch::jit::Module> module) {
  return std::make_unique<TorchInstance>(std::move(plan), std::move(module));
}

}  // namespace nereid::backends::pytorch
