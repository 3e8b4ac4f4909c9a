// The pytorch runtime library (pytorch/libnereid_pytorch_runtime.so): loads TorchScript modules,
// reads their forward signature, plans the IO mapping and creates instances. Execution lives in
// torch_instance.cc.
//
// Ownership: the core owns Models and Instances; a Model holds its plan and, until the first
// instance takes it, the module it loaded for validation. Thread-safety: TorchRuntime and
// TorchModel may be called concurrently (the spare module is guarded by a mutex; torch::jit::load
// is thread-safe).
#include <ATen/Parallel.h>

#include <atomic>
#include <exception>
#include <filesystem>
#include <system_error>

#include "common/thread_annotations.h"
#include "pytorch/torch_internal.h"

namespace nereid::backends::pytorch {

std::optional<at::ScalarType> ToTorchType(DataType type) {
  switch (type) {
    case DataType::kBool:
      return at::kBool;
    case DataType::kUint8:
      return at::kByte;
    case DataType::kInt8:
      return at::kChar;
    case DataType::kInt16:
      return at::kShort;
    case DataType::kInt32:
      return at::kInt;
    case DataType::kInt64:
      return at::kLong;
    case DataType::kFp16:
      return at::kHalf;
    case DataType::kFp32:
      return at::kFloat;
    case DataType::kFp64:
      return at::kDouble;
    case DataType::kBf16:
      return at::kBFloat16;
    default:
      return std::nullopt;
  }
}

std::optional<DataType> FromTorchType(at::ScalarType type) {
  for (DataType t : kAllDataTypes) {
    if (ToTorchType(t) == type) return t;
  }
  return std::nullopt;
}

namespace {

using backend::LogLevel;

void Log(const backend::LogFunction& log, LogLevel level, const std::string& message) {
  if (log) log(level, message);
}

ValueKind Classify(const c10::TypePtr& type) {
  switch (type->kind()) {
    case c10::TypeKind::TensorType:
      return ValueKind::kTensor;
    case c10::TypeKind::AnyType:
      return ValueKind::kAny;
    case c10::TypeKind::ListType:
      return type->expectRef<c10::ListType>().getElementType()->kind() == c10::TypeKind::StringType
                 ? ValueKind::kStringList
                 : ValueKind::kOther;
    case c10::TypeKind::DictType: {
      const auto& dict = type->expectRef<c10::DictType>();
      return dict.getKeyType()->kind() == c10::TypeKind::StringType &&
                     dict.getValueType()->kind() == c10::TypeKind::TensorType
                 ? ValueKind::kTensorDict
                 : ValueKind::kOther;
    }
    default:
      return ValueKind::kOther;
  }
}

StatusOr<ForwardSignature> ReadSignature(const std::string& model_name,
                                         const torch::jit::Module& module) {
  c10::optional<torch::jit::Method> forward = module.find_method("forward");
  if (!forward) {
    return InvalidArgument("unable to load model '" + model_name +
                           "', the TorchScript module has no forward method");
  }
  const c10::FunctionSchema& schema = forward->function().getSchema();
  ForwardSignature sig;
  const auto& args = schema.arguments();
  const size_t first = !args.empty() && args[0].type()->kind() == c10::TypeKind::ClassType ? 1 : 0;
  for (size_t i = first; i < args.size(); ++i) {
    sig.arguments.push_back({args[i].name(), Classify(args[i].type()), args[i].type()->str()});
  }
  if (schema.returns().size() != 1) {
    sig.return_type = "(" + std::to_string(schema.returns().size()) + " values)";
    sig.returns.assign(schema.returns().size(), ValueKind::kOther);
    return sig;
  }
  const c10::TypePtr& ret = schema.returns()[0].type();
  sig.return_type = ret->str();
  if (ret->kind() == c10::TypeKind::TupleType) {
    sig.returns_tuple = true;
    for (const c10::TypePtr& element : ret->containedTypes()) {
      sig.returns.push_back(Classify(element));
    }
  } else {
    sig.returns.push_back(Classify(ret));
  }
  return sig;
}

std::string TorchMessage(const std::exception& e) {
  if (const auto* c10 = dynamic_cast<const c10::Error*>(&e)) return c10->what_without_backtrace();
  return e.what();
}

StatusOr<std::shared_ptr<torch::jit::Module>> LoadModule(const std::string& model_name,
                                                         const std::string& path,
                                                         bool inference_mode) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Unavailable("unable to find '" + path + "' for model '" + model_name + "'");
  }
  try {
    // Triton guards the load too: tensors created while loading are then inference tensors.
    c10::InferenceMode guard(inference_mode);
    return std::make_shared<torch::jit::Module>(torch::jit::load(path, torch::kCPU));
  } catch (const std::exception& e) {
    return Internal("failed to load model '" + model_name + "': " + TorchMessage(e));
  }
}

template <typename F>
auto Guarded(const std::string& what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::exception& e) {
    return Internal(what + ": " + TorchMessage(e));
  } catch (...) {
    return Internal(what + ": unknown exception");
  }
}

class TorchModel final : public backend::Model {
 public:
  TorchModel(std::string path, std::shared_ptr<const ExecutionPlan> plan,
             std::shared_ptr<torch::jit::Module> module)
      : path_(std::move(path)), plan_(std::move(plan)), spare_(std::move(module)) {}

  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions& options) override {
    return Guarded("failed to create instance '" + options.name + "'",
                   [&]() -> StatusOr<std::unique_ptr<backend::ModelInstance>> {
                     std::shared_ptr<torch::jit::Module> module = NextModule();
                     if (module == nullptr) {
                       NEREID_ASSIGN_OR_RETURN(module, LoadModule(plan_->model_name, path_,
                                                                  plan_->settings.inference_mode));
                     }
                     return MakeTorchInstance(plan_, std::move(module));
                   });
  }

 private:
  // The module loaded at validation goes to the first instance; with weight sharing, to all.
  std::shared_ptr<torch::jit::Module> NextModule() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (plan_->settings.weight_sharing) return spare_;
    return std::move(spare_);
  }

  const std::string path_;
  const std::shared_ptr<const ExecutionPlan> plan_;
  Mutex mu_;
  std::shared_ptr<torch::jit::Module> spare_ GUARDED_BY(mu_);
};

class TorchRuntime final : public backend::Backend {
 public:
  // Created on the first model load, before any forward has changed a thread's OpenMP setting, so
  // at::get_num_threads() is still libtorch's default (one per core, or OMP_NUM_THREADS).
  explicit TorchRuntime(backend::LogFunction log)
      : log_(std::move(log)), default_intra_op_threads_(at::get_num_threads()) {}

  backend::BackendInfo Info() const override {
    return {"pytorch", {"pytorch_libtorch"}, "model.pt", false, 1};
  }

  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions&) override {
    return Unsupported("auto-complete is not supported for pytorch backend");
  }

  StatusOr<std::unique_ptr<backend::Model>> LoadModel(
      const backend::ModelLoadOptions& options) override {
    return Guarded("failed to load model '" + options.model_name + "'",
                   [&]() -> StatusOr<std::unique_ptr<backend::Model>> { return Load(options); });
  }

 private:
  StatusOr<std::unique_ptr<backend::Model>> Load(const backend::ModelLoadOptions& options) {
    const std::string& name = options.model_name;
    NEREID_ASSIGN_OR_RETURN(TorchModelConfig config, ParseTorchModelConfig(options.config_json));
    StatusOr<TorchSettings> settings = ReadTorchSettings(config.base);
    if (!settings.ok()) {
      return InvalidArgument("unable to load model '" + name + "', " + settings.status().message());
    }
    SettleInterOpThreads(settings->inter_op_threads, name, log_);
    NEREID_ASSIGN_OR_RETURN(std::shared_ptr<torch::jit::Module> module,
                            LoadModule(name, options.model_path, settings->inference_mode));
    NEREID_ASSIGN_OR_RETURN(ForwardSignature sig, ReadSignature(name, *module));
    NEREID_ASSIGN_OR_RETURN(IoPlan io, PlanModelIo(name, config, sig));
    for (const std::string& warning : io.warnings) Log(log_, LogLevel::kWarning, warning);
    auto plan = std::make_shared<ExecutionPlan>();
    plan->model_name = name;
    plan->max_batch_size = config.base.max_batch_size;
    plan->io = std::move(io);
    plan->settings = std::move(settings).value();
    // 0 asks for libtorch's default; it is applied explicitly because the executing thread may
    // carry another model's setting.
    if (plan->settings.intra_op_threads == 0) {
      plan->settings.intra_op_threads = default_intra_op_threads_;
    }
    plan->log = log_;
    Log(log_, LogLevel::kInfo,
        "model '" + name + "': " + std::to_string(plan->settings.intra_op_threads) +
            " intra-op thread(s) per instance, optimized execution " +
            (plan->settings.optimized_execution ? "on" : "off") + ", inference mode " +
            (plan->settings.inference_mode ? "on" : "off (no-grad)") + ", weight sharing " +
            (plan->settings.weight_sharing ? "on" : "off"));
    return std::unique_ptr<backend::Model>(
        std::make_unique<TorchModel>(options.model_path, std::move(plan), std::move(module)));
  }

  const backend::LogFunction log_;
  const int default_intra_op_threads_;
};

}  // namespace

void SettleInterOpThreads(std::optional<int> requested, const std::string& model_name,
                          const backend::LogFunction& log) {
  static std::atomic<bool> settled{false};
  static Mutex mu;  // serializes the first sizing
  if (settled.load(std::memory_order_acquire) && !requested) return;
  MutexLock lock(mu);
  if (!settled.load(std::memory_order_relaxed)) {
    // Nereid's default is one inter-op thread (libtorch's is one per core): the pool only runs
    // torch.jit.fork tasks, and instances already give parallelism across requests.
    const int threads = requested.value_or(1);
    try {
      at::set_num_interop_threads(threads);
    } catch (const std::exception&) {  // already started (e.g. by another library): keep it
    }
    settled.store(true, std::memory_order_release);
    if (requested) {
      Log(log, LogLevel::kInfo,
          "inter-op thread count is set to " + std::to_string(at::get_num_interop_threads()) +
              " (process-wide), requested by model '" + model_name + "'");
    }
    return;
  }
  if (requested && *requested != at::get_num_interop_threads()) {
    Log(log, LogLevel::kWarning,
        "model '" + model_name + "': INTER_OP_THREAD_COUNT " + std::to_string(*requested) +
            " is ignored; libtorch's inter-op pool is process-wide and already has " +
            std::to_string(at::get_num_interop_threads()) + " thread(s)");
  }
}

}  // namespace nereid::backends::pytorch

NEREID_BACKEND_EXPORT uint32_t NereidTorchRuntimeApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidTorchRuntimeCreate(
    const nereid::backend::BackendOptions* options, std::string* error) {
  try {
    return new nereid::backends::pytorch::TorchRuntime(options != nullptr ? options->log : nullptr);
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("pytorch runtime: ") + e.what();
  } catch (...) {
    if (error != nullptr) *error = "pytorch runtime: unknown exception";
  }
  return nullptr;
}
