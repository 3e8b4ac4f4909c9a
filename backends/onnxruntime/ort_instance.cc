// Execution of one ONNX Runtime session: request memory in, core-provided memory out.
//
// An OrtInstance owns its session and per-call scratch buffers, so it is not thread-safe: the
// core calls Execute on one instance from one thread at a time (backend_api.h). After an error
// the instance stays usable: scratch is reset at the start of every call.
#include <cstring>
#include <exception>
#include <string_view>

#include "common/config_reader.h"
#include "common/tensor_util.h"
#include "onnxruntime/ort_internal.h"

namespace nereid::backends::ort {

std::optional<DataType> FromOrtType(ONNXTensorElementDataType type) {
  switch (type) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
      return DataType::kBool;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return DataType::kUint8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return DataType::kUint16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT32:
      return DataType::kUint32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return DataType::kUint64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
      return DataType::kInt8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
      return DataType::kInt16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT32:
      return DataType::kInt32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
      return DataType::kInt64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
      return DataType::kFp16;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT:
      return DataType::kFp32;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
      return DataType::kFp64;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING:
      return DataType::kBytes;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
      return DataType::kBf16;
    default:
      return std::nullopt;
  }
}

ONNXTensorElementDataType ToOrtType(DataType type) {
  for (int i = 0; i <= ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16; ++i) {
    const auto ort_type = static_cast<ONNXTensorElementDataType>(i);
    if (FromOrtType(ort_type) == type) return ort_type;
  }
  return ONNX_TENSOR_ELEMENT_DATA_TYPE_UNDEFINED;
}

bool FixedOutputShape(const ExecutionPlan::Tensor& spec, int64_t batch_size,
                      std::vector<int64_t>* shape) {
  shape->clear();
  if (!spec.fixed_shape) return false;
  shape->assign(spec.dims.begin(), spec.dims.end());
  if (!shape->empty() && (*shape)[0] == -1) {
    if (batch_size <= 0) return false;
    (*shape)[0] = batch_size;
  }
  return true;
}

namespace {

constexpr std::string_view kFailure = "onnxruntime execute failure: ";

Status ExecuteError(std::string_view detail) {
  return InvalidArgument(std::string(kFailure) + std::string(detail));
}

Status FromOrtException(const Ort::Exception& e) {
  std::string message = std::string(kFailure) + e.what();
  switch (e.GetOrtErrorCode()) {
    case ORT_INVALID_ARGUMENT:
    case ORT_INVALID_GRAPH:
      return InvalidArgument(std::move(message));
    case ORT_NOT_IMPLEMENTED:
      return Unsupported(std::move(message));
    default:
      return Internal(std::move(message));
  }
}

class OrtInstance final : public backend::ModelInstance {
 public:
  OrtInstance(std::shared_ptr<const ExecutionPlan> plan, std::shared_ptr<Ort::Env> env,
              Ort::Session session)
      : plan_(std::move(plan)),
        env_(std::move(env)),
        session_(std::move(session)),
        memory_info_(Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault)) {
    checked_.reserve(plan_->inputs.size());
    input_names_.reserve(plan_->inputs.size());
    input_values_.reserve(plan_->inputs.size());
    output_names_.reserve(plan_->outputs.size());
    planned_.resize(plan_->outputs.size());
    output_values_.reserve(plan_->outputs.size());
    preallocated_.reserve(plan_->outputs.size());
  }

  Status Execute(const backend::ExecuteArgs& args) override {
    Status status;
    try {
      status = Run(args);
    } catch (const Ort::Exception& e) {
      status = FromOrtException(e);
    } catch (const std::exception& e) {
      status = Internal(std::string(kFailure) + e.what());
    } catch (...) {
      status = Internal(std::string(kFailure) + "unknown exception");
    }
    // Release the string tensors built for this request and ORT's outputs; the vectors keep
    // their capacity.
    input_values_.clear();
    output_values_.clear();
    return status;
  }

 private:
  Status Run(const backend::ExecuteArgs& args);
  Status CheckInput(const backend::TensorRef& tensor);
  void SelectOutputs(const backend::ExecuteArgs& args);
  Status RunDirect(const backend::ExecuteArgs& args);
  Status AddInput(const CheckedInput& input);
  Status AddBytesInput(const backend::TensorRef& tensor, size_t count);
  Status WriteOutput(const ExecutionPlan::Tensor& spec, const Ort::Value& value,
                     backend::OutputAllocator& allocator);

  const std::shared_ptr<const ExecutionPlan> plan_;
  const std::shared_ptr<Ort::Env> env_;  // must outlive session_
  Ort::Session session_;
  Ort::MemoryInfo memory_info_;
  Ort::RunOptions run_options_;
  Ort::AllocatorWithDefaultOptions allocator_;
  StagedRunner staged_;  // declared after session_: destroyed before it
  // Per-Execute scratch, reused so a steady state allocates only what ORT allocates.
  std::vector<CheckedInput> checked_;
  std::vector<const char*> input_names_;
  std::vector<Ort::Value> input_values_;
  std::vector<PlannedOutput> planned_;  // the selected outputs; first `planned_count_` valid
  size_t planned_count_ = 0;
  bool all_fixed_ = false;  // every selected output has its shape known before Run
  std::vector<const char*> output_names_;
  std::vector<Ort::Value> output_values_;
  std::vector<bool> preallocated_;  // per selected output: written by ORT into the core's memory
  std::vector<std::string_view> elements_;
  std::vector<int64_t> shape_;
  std::vector<size_t> lengths_;
};

// Numeric inputs and outputs whose shapes are known before Run go through StagedRunner when
// they are small (no OrtValue per call, nothing allocated by ORT) or, when larger, are run over
// the request's memory with the outputs created over the core's (no copy at all); everything
// else (BYTES, outputs whose shape only ORT knows) has ORT allocate the outputs, copied after.
Status OrtInstance::Run(const backend::ExecuteArgs& args) {
  if (args.outputs == nullptr) return ExecuteError("no output allocator");
  checked_.clear();
  for (const backend::TensorRef& tensor : args.inputs) NEREID_RETURN_IF_ERROR(CheckInput(tensor));
  SelectOutputs(args);
  bool stageable = all_fixed_;
  size_t bytes = 0;
  for (size_t i = 0; stageable && i < checked_.size(); ++i) {
    const CheckedInput& in = checked_[i];
    stageable = plan_->inputs[in.spec].data_type != DataType::kBytes;
    for (size_t j = 0; stageable && j < i; ++j) stageable = checked_[j].spec != in.spec;
    bytes += in.tensor->data.size();
  }
  for (size_t k = 0; stageable && k < planned_count_; ++k) bytes += planned_[k].byte_size;
  if (stageable && bytes <= StagedRunner::kMaxBytes) {
    return staged_.Run(*plan_, session_, run_options_, std::span(checked_),
                       std::span(planned_).first(planned_count_), args);
  }
  return RunDirect(args);
}

// The requested outputs (all configured ones when the request names none of them), with their
// shapes and sizes when known before Run.
void OrtInstance::SelectOutputs(const backend::ExecuteArgs& args) {
  planned_count_ = 0;
  for (int pass = 0; pass < 2 && planned_count_ == 0; ++pass) {
    for (size_t i = 0; i < plan_->outputs.size(); ++i) {
      if (pass == 0 && !args.outputs->IsRequested(plan_->outputs[i].name)) continue;
      planned_[planned_count_++].spec = i;
    }
  }
  all_fixed_ = true;
  for (size_t k = 0; k < planned_count_; ++k) {
    PlannedOutput& out = planned_[k];
    const ExecutionPlan::Tensor& spec = plan_->outputs[out.spec];
    std::optional<size_t> count;
    if (FixedOutputShape(spec, args.batch_size, &out.shape)) count = ElementCount(out.shape);
    out.known = count.has_value();
    out.byte_size = count ? *count * DataTypeByteSize(spec.data_type) : 0;
    all_fixed_ = all_fixed_ && out.known;
  }
}

Status OrtInstance::RunDirect(const backend::ExecuteArgs& args) {
  input_names_.clear();
  input_values_.clear();
  for (const CheckedInput& in : checked_) NEREID_RETURN_IF_ERROR(AddInput(in));
  output_names_.clear();
  output_values_.clear();
  preallocated_.clear();
  for (size_t k = 0; k < planned_count_; ++k) {
    const PlannedOutput& out = planned_[k];
    const ExecutionPlan::Tensor& spec = plan_->outputs[out.spec];
    output_names_.push_back(spec.name.c_str());
    if (!out.known) {
      // Empty slot: ORT allocates the output into it (the wrapper returning a vector would
      // allocate that vector on every call).
      output_values_.emplace_back(nullptr);
      preallocated_.push_back(false);
      continue;
    }
    NEREID_ASSIGN_OR_RETURN(std::span<char> dst, args.outputs->Allocate(spec.name, spec.data_type,
                                                                        out.shape, out.byte_size));
    if (dst.size() < out.byte_size) return ShortOutputBuffer();
    static char empty_tensor_data;  // ORT needs an address even for zero elements
    output_values_.push_back(
        Ort::Value::CreateTensor(memory_info_, out.byte_size == 0 ? &empty_tensor_data : dst.data(),
                                 out.byte_size, out.shape.data(), out.shape.size(), spec.ort_type));
    preallocated_.push_back(true);
  }
  if (args.times != nullptr) args.times->input_end_ns = backend::ExecuteClockNs();
  session_.Run(run_options_, input_names_.data(), input_values_.data(), input_values_.size(),
               output_names_.data(), output_values_.data(), output_values_.size());
  if (args.times != nullptr) args.times->output_start_ns = backend::ExecuteClockNs();
  input_values_.clear();
  for (size_t k = 0; k < output_values_.size(); ++k) {
    if (preallocated_[k]) continue;
    NEREID_RETURN_IF_ERROR(
        WriteOutput(plan_->outputs[planned_[k].spec], output_values_[k], *args.outputs));
  }
  return Status::Ok();
}

Status OrtInstance::CheckInput(const backend::TensorRef& tensor) {
  size_t index = plan_->inputs.size();
  for (size_t i = 0; i < plan_->inputs.size(); ++i) {
    if (plan_->inputs[i].name == tensor.name) index = i;
  }
  if (index == plan_->inputs.size()) {
    return ExecuteError("unexpected input '" + std::string(tensor.name) + "'");
  }
  const ExecutionPlan::Tensor& spec = plan_->inputs[index];
  if (tensor.data_type != spec.data_type) {
    return ExecuteError("input '" + spec.name + "' has datatype " +
                        std::string(DataTypeWireName(tensor.data_type)) + ", expected " +
                        std::string(DataTypeWireName(spec.data_type)));
  }
  const std::optional<size_t> count = ElementCount(tensor.shape);
  if (!count) return ExecuteError("input '" + spec.name + "' has an invalid shape");
  if (spec.data_type != DataType::kBytes) {
    const size_t element_size = DataTypeByteSize(spec.data_type);
    if (*count > tensor.data.size() / element_size || *count * element_size != tensor.data.size()) {
      return ExecuteError("input '" + spec.name + "' holds " + std::to_string(tensor.data.size()) +
                          " bytes, shape " + ShapeToString(tensor.shape) + " needs " +
                          std::to_string(*count) + " elements of " + std::to_string(element_size));
    }
  }
  checked_.push_back({index, &tensor});
  return Status::Ok();
}

Status OrtInstance::AddInput(const CheckedInput& input) {
  const ExecutionPlan::Tensor& spec = plan_->inputs[input.spec];
  const backend::TensorRef& tensor = *input.tensor;
  input_names_.push_back(spec.name.c_str());
  if (spec.data_type == DataType::kBytes) {
    return AddBytesInput(tensor, ElementCount(tensor.shape).value_or(0));
  }
  // ORT never writes to inputs; a zero-size tensor still needs a non-null pointer.
  static char empty_tensor_data;
  char* data = tensor.data.empty() ? &empty_tensor_data : const_cast<char*>(tensor.data.data());
  input_values_.push_back(Ort::Value::CreateTensor(memory_info_, data, tensor.data.size(),
                                                   tensor.shape.data(), tensor.shape.size(),
                                                   spec.ort_type));
  return Status::Ok();
}

Status OrtInstance::AddBytesInput(const backend::TensorRef& tensor, size_t count) {
  Status split = SplitBytesElements(tensor.data, count, &elements_);
  if (!split.ok()) {
    return ExecuteError("input '" + std::string(tensor.name) + "': " + split.message());
  }
  Ort::Value value = Ort::Value::CreateTensor(allocator_, tensor.shape.data(), tensor.shape.size(),
                                              ONNX_TENSOR_ELEMENT_DATA_TYPE_STRING);
  for (size_t i = 0; i < elements_.size(); ++i) {
    char* dst = value.GetResizedStringTensorElementBuffer(i, elements_[i].size());
    if (!elements_[i].empty()) std::memcpy(dst, elements_[i].data(), elements_[i].size());
  }
  input_values_.push_back(std::move(value));
  return Status::Ok();
}

Status OrtInstance::WriteOutput(const ExecutionPlan::Tensor& spec, const Ort::Value& value,
                                backend::OutputAllocator& allocator) {
  if (!value.IsTensor())
    return Internal(std::string(kFailure) + "output '" + spec.name + "' is not a tensor");
  Ort::TensorTypeAndShapeInfo info = value.GetTensorTypeAndShapeInfo();
  if (info.GetElementType() != spec.ort_type) {
    return Internal(std::string(kFailure) + "output '" + spec.name +
                    "' has an unexpected element type " + std::to_string(info.GetElementType()));
  }
  shape_.resize(info.GetDimensionsCount());
  // The C call fills our reusable buffer; the C++ wrapper (GetShape) allocates a vector.
  Ort::ThrowOnError(Ort::GetApi().GetDimensions(info, shape_.data(), shape_.size()));
  const size_t count = info.GetElementCount();
  if (spec.data_type != DataType::kBytes) {
    const size_t byte_size = count * DataTypeByteSize(spec.data_type);
    NEREID_ASSIGN_OR_RETURN(std::span<char> dst,
                            allocator.Allocate(spec.name, spec.data_type, shape_, byte_size));
    if (dst.size() < byte_size) return ShortOutputBuffer();
    if (byte_size > 0) std::memcpy(dst.data(), value.GetTensorRawData(), byte_size);
    return Status::Ok();
  }
  lengths_.resize(count);
  size_t byte_size = count * kBytesLengthPrefix;
  for (size_t i = 0; i < count; ++i) {
    lengths_[i] = value.GetStringTensorElementLength(i);
    if (lengths_[i] > UINT32_MAX) return Internal(std::string(kFailure) + "string too long");
    byte_size += lengths_[i];
  }
  NEREID_ASSIGN_OR_RETURN(std::span<char> dst,
                          allocator.Allocate(spec.name, spec.data_type, shape_, byte_size));
  if (dst.size() < byte_size) return ShortOutputBuffer();
  char* p = dst.data();
  for (size_t i = 0; i < count; ++i) {
    WriteBytesLength(static_cast<uint32_t>(lengths_[i]), p);
    p += kBytesLengthPrefix;
    if (lengths_[i] > 0) value.GetStringTensorElement(lengths_[i], i, p);
    p += lengths_[i];
  }
  return Status::Ok();
}

}  // namespace

Status ShortOutputBuffer() { return Internal(std::string(kFailure) + "short output buffer"); }

std::unique_ptr<backend::ModelInstance> MakeOrtInstance(std::shared_ptr<const ExecutionPlan> plan,
                                                        std::shared_ptr<Ort::Env> env,
                                                        Ort::Session session) {
  return std::make_unique<OrtInstance>(std::move(plan), std::move(env), std::move(session));
}

}  // namespace nereid::backends::ort
