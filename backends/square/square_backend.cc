// Triton's QA test backend `square` (square_backend:src/square.cc), a decoupled model with one
// input IN (INT32 [1]) and one output OUT (INT32 [1]): for a request with IN = [N] a thread sends N
// responses, each with OUT = [N], then a flags-only FINAL (only the FINAL when N is 0).
//
// Configuration parameters (string_value, digits only; anything else is ignored with a log line,
// as Triton's does): CUSTOM_INFER_DELAY_NS before each response, CUSTOM_OUTPUT_DELAY_NS after its
// output is written; with CUSTOM_FAIL_COUNT F and CUSTOM_EMPTY_COUNT E, responses [N-E-F, N-E)
// are errors UNKNOWN "simulated failure" and [N-E, N) are not sent at all. When the client
// cancels, the thread waits CUSTOM_CANCEL_DELAY_NS (its clean-up time), ends the request with
// CANCELLED "cancelled" and stops.
//
// Thread-safety: the model's parameters are read-only after load; an instance keeps one sending
// thread per request in flight and joins them all when it is destroyed.
#include <chrono>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config_reader.h"
#include "common/response_threads.h"
#include "nereid/backend_api.h"

namespace nereid::backends::square {
namespace {

struct Params {
  uint64_t infer_delay_ns = 0;
  uint64_t output_delay_ns = 0;
  uint64_t cancel_delay_ns = 0;
  uint64_t fail_count = 0;
  uint64_t empty_count = 0;
};

// Triton's square reads each parameter as an unsigned decimal and leaves the default otherwise.
void ReadParameter(const ModelConfig& config, std::string_view key, const backend::LogFunction& log,
                   uint64_t* value) {
  const std::string* text = config.FindParameter(key);
  if (text == nullptr) return;
  uint64_t v = 0;
  bool ok = true;
  for (char c : *text) {
    if (c < '0' || c > '9' || __builtin_mul_overflow(v, 10, &v) ||
        __builtin_add_overflow(v, static_cast<uint64_t>(c - '0'), &v)) {
      ok = false;
      break;
    }
  }
  if (!ok) {
    if (log) {
      log(backend::LogLevel::kInfo,
          *text + " string_value from " + std::string(key) + " parameter is not a number");
    }
    return;
  }
  *value = v;
}

// Triton's ValidateModelConfig, with its texts.
Status Validate(const ModelConfig& config) {
  if (config.inputs.size() != 1) {
    return InvalidArgument("expected 1 input, got " + std::to_string(config.inputs.size()));
  }
  if (config.outputs.size() != 1) {
    return InvalidArgument("expected 1 output, got " + std::to_string(config.outputs.size()));
  }
  const IoConfig& in = config.inputs[0];
  const IoConfig& out = config.outputs[0];
  if (in.name != "IN") {
    return InvalidArgument("expected first input tensor name to be IN, got " + in.name);
  }
  if (out.name != "OUT") {
    return InvalidArgument("expected first output tensor name to be OUT, got " + out.name);
  }
  if (in.dims.size() != 1 || in.dims[0] != 1) {
    return InvalidArgument("expected IN shape to be [1], got " + ShapeToString(in.dims));
  }
  if (out.dims.size() != 1 || out.dims[0] != 1) {
    return InvalidArgument("expected OUT shape to be [1], got " + ShapeToString(out.dims));
  }
  if (in.data_type != DataType::kInt32) {
    return InvalidArgument("expected IN datatype to be INT32, got " +
                           std::string(DataTypeConfigName(in.data_type)));
  }
  if (out.data_type != DataType::kInt32) {
    return InvalidArgument("expected OUT datatype to be INT32, got " +
                           std::string(DataTypeConfigName(out.data_type)));
  }
  return Status::Ok();
}

enum class Result { kSuccess, kFail, kEmpty };

// With N responses, F failing and E empty: [0, N-E-F) succeed, [N-E-F, N-E) fail, [N-E, N) are
// empty.
Result ResultOf(const Params& p, uint64_t index, uint64_t count) {
  if (index + p.fail_count + p.empty_count < count) return Result::kSuccess;
  if (index + p.empty_count < count) return Result::kFail;
  return Result::kEmpty;
}

void SendAll(const Params& p, int32_t count, size_t dims,
             const std::shared_ptr<backend::ResponseSender>& sender) {
  const std::vector<int64_t> shape(dims, 1);
  const uint64_t n = static_cast<uint64_t>(count);
  for (uint64_t e = 0; e < n; ++e) {
    if (!SleepUnlessCancelled(*sender, std::chrono::nanoseconds(p.infer_delay_ns))) break;
    const Result result = ResultOf(p, e, n);
    if (result == Result::kEmpty) continue;
    if (!SleepUnlessCancelled(*sender, std::chrono::nanoseconds(p.output_delay_ns))) break;
    if (result == Result::kFail) {
      (void)sender->SendError(UnknownError("simulated failure"), 0);
      continue;
    }
    const backend::TensorRef out[] = {
        {"OUT", DataType::kInt32, shape, {reinterpret_cast<const char*>(&count), sizeof(count)}}};
    (void)sender->Send(out, 0);
  }
  if (sender->IsCancelled()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(p.cancel_delay_ns));
    (void)sender->SendError(Status(StatusCode::kCancelled, "cancelled"), backend::kResponseFinal);
    return;
  }
  (void)sender->Send({}, backend::kResponseFinal);
}

class SquareInstance final : public backend::ModelInstance {
 public:
  explicit SquareInstance(const Params& params) : params_(params) {}

  Status Execute(const backend::ExecuteArgs& args) override {
    const backend::TensorRef* in = FindTensor(args.inputs, "IN");
    if (in == nullptr || in->data_type != DataType::kInt32) {
      return InvalidArgument("expected input IN of datatype INT32");
    }
    // One IN element per request: [1], or [B,1] for B batched requests.
    const size_t requests = args.senders.size();
    if (requests == 0) return InvalidArgument("the square backend needs a decoupled model");
    if ((in->shape.size() == 2 && in->shape[0] != static_cast<int64_t>(requests)) ||
        in->data.size() != requests * sizeof(int32_t)) {
      return InvalidArgument("unexpected shape for IN input");
    }
    std::vector<int32_t> counts(requests);
    std::memcpy(counts.data(), in->data.data(), requests * sizeof(int32_t));
    for (int32_t count : counts) {
      if (count < 0) {
        return InvalidArgument("unexpected value for IN input: " + std::to_string(count) +
                               " (expected the number of responses, 0 or more)");
      }
    }
    const size_t dims = in->shape.size();
    for (size_t r = 0; r < requests; ++r) {
      NEREID_RETURN_IF_ERROR(threads_.Start(
          "square", [p = params_, count = counts[r], dims, sender = args.senders[r]]() {
            SendAll(p, count, dims, sender);
          }));
    }
    return Status::Ok();
  }

 private:
  const Params params_;
  ResponseThreads threads_;  // joined at destruction
};

class SquareModel final : public backend::Model {
 public:
  explicit SquareModel(const Params& params) : params_(params) {}

  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions&) override {
    try {
      return std::unique_ptr<backend::ModelInstance>(std::make_unique<SquareInstance>(params_));
    } catch (const std::exception& e) {
      return Internal(std::string("square: ") + e.what());
    }
  }

 private:
  const Params params_;
};

class SquareBackend final : public backend::Backend {
 public:
  explicit SquareBackend(backend::LogFunction log) : log_(std::move(log)) {}

  backend::BackendInfo Info() const override { return {"square", {}, "", false}; }
  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions&) override {
    return Unsupported("the square backend does not auto-complete configurations");
  }
  StatusOr<std::unique_ptr<backend::Model>> LoadModel(
      const backend::ModelLoadOptions& options) override {
    try {
      NEREID_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(options.config_json));
      NEREID_RETURN_IF_ERROR(Validate(config));
      Params p;
      ReadParameter(config, "CUSTOM_INFER_DELAY_NS", log_, &p.infer_delay_ns);
      ReadParameter(config, "CUSTOM_OUTPUT_DELAY_NS", log_, &p.output_delay_ns);
      ReadParameter(config, "CUSTOM_CANCEL_DELAY_NS", log_, &p.cancel_delay_ns);
      ReadParameter(config, "CUSTOM_FAIL_COUNT", log_, &p.fail_count);
      ReadParameter(config, "CUSTOM_EMPTY_COUNT", log_, &p.empty_count);
      return std::unique_ptr<backend::Model>(std::make_unique<SquareModel>(p));
    } catch (const std::exception& e) {
      return Internal(std::string("square: ") + e.what());
    }
  }

 private:
  backend::LogFunction log_;
};

}  // namespace
}  // namespace nereid::backends::square

NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
    const nereid::backend::BackendOptions* options, std::string* error) {
  try {
    return new nereid::backends::square::SquareBackend(
        options != nullptr ? options->log : nereid::backend::LogFunction());
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("square backend: ") + e.what();
  }
  return nullptr;
}
