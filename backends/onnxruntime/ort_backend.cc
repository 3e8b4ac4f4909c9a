// The onnxruntime backend plugin: entry points, auto-complete, model load and session creation.
// Execution lives in ort_instance.cc.
//
// ONNX Runtime itself is mapped only when the first model is auto-completed or loaded: the plugin
// does not link libonnxruntime.so.1 (ORT_API_MANUAL_INIT) but dlopens it then (LoadOrtApi), so a
// server whose repository has no ONNX model never pays its ~12 MiB of touched pages or its
// environment's thread (issue 21, footprint).
//
// Ownership: the core owns the Backend, Models and Instances; each of them holds a shared_ptr to
// the one Ort::Env, so no session outlives it. Thread-safety: OrtBackend and OrtModel may be
// called concurrently (their state is immutable except OrtModel's spare session, which a mutex
// guards); ORT session creation is itself thread-safe.
#include <dlfcn.h>
#include <pthread.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "common/config_reader.h"
#include "common/thread_annotations.h"
#include "onnxruntime/autocomplete.h"
#include "onnxruntime/model_io.h"
#include "onnxruntime/ort_internal.h"

namespace nereid::backends::ort {
namespace {

using backend::LogLevel;

LogLevel ToLogLevel(OrtLoggingLevel severity) {
  switch (severity) {
    case ORT_LOGGING_LEVEL_VERBOSE:
      return LogLevel::kVerbose;
    case ORT_LOGGING_LEVEL_INFO:
      return LogLevel::kInfo;
    case ORT_LOGGING_LEVEL_WARNING:
      return LogLevel::kWarning;
    default:
      return LogLevel::kError;
  }
}

// ORT keeps one process-wide environment whose logger is fixed when it is first created, so log
// lines are routed through this process-wide sink, which the latest backend sets.
class LogRouter {
 public:
  static LogRouter& Get() {
    static auto* router = new LogRouter();  // never destroyed: ORT may log during exit
    return *router;
  }
  void Set(backend::LogFunction fn) EXCLUDES(mu_) {
    auto sink = fn ? std::make_shared<const backend::LogFunction>(std::move(fn)) : nullptr;
    MutexLock lock(mu_);
    sink_ = std::move(sink);
  }
  static void Callback(void*, OrtLoggingLevel severity, const char* category, const char*,
                       const char*, const char* message) noexcept {
    try {
      Get().Log(severity, category, message);
    } catch (...) {  // nothing may unwind into ORT; the log sink itself failed, so use stderr
      std::fputs("onnxruntime: a log message was lost: the log sink threw\n", stderr);
    }
  }

 private:
  void Log(OrtLoggingLevel severity, const char* category, const char* message) EXCLUDES(mu_) {
    std::shared_ptr<const backend::LogFunction> sink;
    {
      MutexLock lock(mu_);
      sink = sink_;
    }
    const std::string line =
        std::string("onnxruntime [") + (category ? category : "") + "] " + (message ? message : "");
    if (sink == nullptr) {
      std::fprintf(stderr, "%s\n", line.c_str());
      return;
    }
    (*sink)(ToLogLevel(severity), line);
  }

  Mutex mu_;
  std::shared_ptr<const backend::LogFunction> sink_ GUARDED_BY(mu_);
};

struct SessionSettings {
  int intra_op_threads = 1;
  int inter_op_threads = 1;
  GraphOptimizationLevel level = ORT_ENABLE_ALL;
  ExecutionMode mode = ORT_SEQUENTIAL;
  bool allow_spinning = false;
  // Triton's enable_mem_arena / enable_mem_pattern parameters; unset: ONNX Runtime's default (on).
  std::optional<bool> mem_arena;
  std::optional<bool> mem_pattern;
  std::vector<std::pair<std::string, std::string>> session_entries;  // "session.*" parameters
};

// A boolean parameter that is applied only when the configuration names it.
StatusOr<std::optional<bool>> OptionalBoolParameter(const ModelConfig& config,
                                                    std::string_view key) {
  if (config.FindParameter(key) == nullptr) return std::optional<bool>();
  NEREID_ASSIGN_OR_RETURN(bool value, BoolParameter(config, key, false));
  return std::optional<bool>(value);
}

StatusOr<SessionSettings> ReadSessionSettings(const ModelConfig& config) {
  SessionSettings s;
  NEREID_ASSIGN_OR_RETURN(s.intra_op_threads,
                          IntParameter(config, "intra_op_thread_count", 1, 0, 1024));
  NEREID_ASSIGN_OR_RETURN(s.inter_op_threads,
                          IntParameter(config, "inter_op_thread_count", 1, 0, 1024));
  NEREID_ASSIGN_OR_RETURN(int64_t mode, IntParameter(config, "execution_mode", 0, 0, 1));
  s.mode = mode == 1 ? ORT_PARALLEL : ORT_SEQUENTIAL;
  NEREID_ASSIGN_OR_RETURN(s.allow_spinning, BoolParameter(config, "allow_spinning", false));
  NEREID_ASSIGN_OR_RETURN(s.mem_arena, OptionalBoolParameter(config, "enable_mem_arena"));
  NEREID_ASSIGN_OR_RETURN(s.mem_pattern, OptionalBoolParameter(config, "enable_mem_pattern"));
  if (config.graph_optimization_level == -1) s.level = ORT_ENABLE_BASIC;
  if (config.graph_optimization_level == 1) s.level = ORT_ENABLE_EXTENDED;
  for (const auto& [key, value] : config.parameters) {
    if (key.starts_with("session.")) s.session_entries.emplace_back(key, value);
  }
  return s;
}

Ort::SessionOptions MakeSessionOptions(const SessionSettings& s) {
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(s.intra_op_threads);
  options.SetInterOpNumThreads(s.inter_op_threads);
  options.SetGraphOptimizationLevel(s.level);
  options.SetExecutionMode(s.mode);
  const char* spin = s.allow_spinning ? "1" : "0";
  options.AddConfigEntry("session.intra_op.allow_spinning", spin);
  options.AddConfigEntry("session.inter_op.allow_spinning", spin);
  if (s.mem_arena) {
    if (*s.mem_arena) {
      options.EnableCpuMemArena();
    } else {
      options.DisableCpuMemArena();
    }
  }
  if (s.mem_pattern) {
    if (*s.mem_pattern) {
      options.EnableMemPattern();
    } else {
      options.DisableMemPattern();
    }
  }
  for (const auto& [key, value] : s.session_entries) {
    options.AddConfigEntry(key.c_str(), value.c_str());
  }
  return options;
}

// Opens `path`. Errors: NotFound when the file is missing, InvalidArgument with ORT's message
// when ORT rejects it.
StatusOr<Ort::Session> OpenSession(Ort::Env& env, const std::string& model_name,
                                   const std::string& path, const SessionSettings& settings) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return NotFound("failed to load model '" + model_name + "': model file '" + path +
                    "' not found");
  }
  try {
    return Ort::Session(env, path.c_str(), MakeSessionOptions(settings));
  } catch (const Ort::Exception& e) {
    return InvalidArgument("failed to load model '" + model_name + "': " + e.what());
  }
}

StatusOr<TensorInfo> ReadTensorInfo(const std::string& model_name, std::string name,
                                    const Ort::TypeInfo& type_info) {
  if (type_info.GetONNXType() != ONNX_TYPE_TENSOR) {
    return InvalidArgument("unable to load model '" + model_name + "', tensor '" + name +
                           "' is not a tensor (sequence, map and optional types are unsupported)");
  }
  auto info = type_info.GetTensorTypeAndShapeInfo();
  std::optional<DataType> type = FromOrtType(info.GetElementType());
  if (!type) {
    return InvalidArgument("unable to load model '" + model_name + "', tensor '" + name +
                           "' has unsupported ONNX element type " +
                           std::to_string(info.GetElementType()));
  }
  std::vector<int64_t> shape = info.GetShape();
  for (int64_t& d : shape) d = d < 0 ? -1 : d;
  return TensorInfo{std::move(name), *type, std::move(shape)};
}

StatusOr<ModelIo> ReadModelIo(const std::string& model_name, const Ort::Session& session) {
  Ort::AllocatorWithDefaultOptions allocator;
  ModelIo io;
  for (size_t i = 0; i < session.GetInputCount(); ++i) {
    NEREID_ASSIGN_OR_RETURN(
        TensorInfo t, ReadTensorInfo(model_name, session.GetInputNameAllocated(i, allocator).get(),
                                     session.GetInputTypeInfo(i)));
    io.inputs.push_back(std::move(t));
  }
  for (size_t i = 0; i < session.GetOutputCount(); ++i) {
    NEREID_ASSIGN_OR_RETURN(
        TensorInfo t, ReadTensorInfo(model_name, session.GetOutputNameAllocated(i, allocator).get(),
                                     session.GetOutputTypeInfo(i)));
    io.outputs.push_back(std::move(t));
  }
  return io;
}

// Whether output `out` (configured, found in the model) can be written into memory given to ORT
// before Run: see ExecutionPlan::Tensor::fixed_shape. A ragged batch (ragged inputs or batch
// inputs) is left to ORT: its outputs' leading dimension need not be the batch size.
bool HasFixedShape(const ModelConfig& config, const IoConfig& out, const TensorInfo& model,
                   const ModelIo& io) {
  if (out.data_type == DataType::kBytes || config.IsBatchOutput(out.name)) return false;
  if (!config.batch_inputs.empty()) return false;
  for (const IoConfig& in : config.inputs) {
    if (in.ragged) return false;
  }
  for (const TensorInfo& in : io.inputs) {
    if (in.name == out.name) return false;  // passed straight through: ORT would not write it
  }
  for (size_t d = 0; d < model.shape.size(); ++d) {
    const bool batch_dim = d == 0 && config.max_batch_size > 0;
    if (model.shape[d] < 0 && !batch_dim) return false;
  }
  return true;
}

ExecutionPlan::Tensor PlanTensor(const std::string& name, DataType type) {
  ExecutionPlan::Tensor tensor;
  tensor.name = name;
  tensor.data_type = type;
  tensor.ort_type = ToOrtType(type);
  return tensor;
}

std::shared_ptr<const ExecutionPlan> MakePlan(const std::string& model_name,
                                              const ModelConfig& config, const ModelIo& io) {
  auto plan = std::make_shared<ExecutionPlan>();
  plan->model_name = model_name;
  plan->batching = config.max_batch_size > 0;
  for (const IoConfig& in : config.inputs) {
    plan->inputs.push_back(PlanTensor(in.name, in.data_type));
  }
  for (const BatchInputConfig& bi : config.batch_inputs) {  // the core computes and passes them
    for (const std::string& target : bi.target_names) {
      plan->inputs.push_back(PlanTensor(target, bi.data_type));
    }
  }
  for (const IoConfig& out : config.outputs) {
    ExecutionPlan::Tensor tensor = PlanTensor(out.name, out.data_type);
    for (const TensorInfo& model : io.outputs) {
      if (model.name != out.name) continue;
      tensor.dims = model.shape;
      tensor.fixed_shape = HasFixedShape(config, out, model, io);
    }
    plan->outputs.push_back(std::move(tensor));
  }
  return plan;
}

// Maps `soname` from the directories this plugin's own search path names (LD_LIBRARY_PATH, its
// RUNPATH, the system's), trying each path itself: a bare dlopen(soname) searches the RUNPATH of
// the object calling dlopen, and under ASan or TSan that caller is the sanitizer's dlopen
// interceptor, whose RUNPATH does not name ONNX Runtime. The last try is the bare name, whose
// dlerror() is what a missing library reports.
void* OpenBesidePlugin(const char* soname) {
  Dl_info info{};
  void* self = nullptr;
  if (dladdr(reinterpret_cast<void*>(&OpenBesidePlugin), &info) != 0 && info.dli_fname != nullptr) {
    self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  }
  if (self != nullptr) {
    Dl_serinfo size{};
    if (dlinfo(self, RTLD_DI_SERINFOSIZE, &size) == 0 && size.dls_size >= sizeof(Dl_serinfo)) {
      std::vector<char> storage(size.dls_size);
      auto* paths = reinterpret_cast<Dl_serinfo*>(storage.data());
      paths->dls_size = size.dls_size;
      paths->dls_cnt = size.dls_cnt;
      if (dlinfo(self, RTLD_DI_SERINFO, paths) == 0) {
        for (unsigned i = 0; i < paths->dls_cnt; ++i) {
          const std::string path = std::string(paths->dls_serpath[i].dls_name) + "/" + soname;
          if (void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL); lib != nullptr) {
            dlclose(self);
            return lib;
          }
        }
      }
    }
    dlclose(self);
  }
  return dlopen(soname, RTLD_NOW | RTLD_LOCAL);
}

// Maps libonnxruntime.so.1 (found through the plugin's search path, OpenBesidePlugin) and sets
// the C++ API's function table, once per process; every later call returns the first outcome.
// The library is never unmapped (ONNX Runtime's process-wide state does not survive it).
Status LoadOrtApi() {
  static const Status loaded = []() -> Status {
    void* lib = OpenBesidePlugin("libonnxruntime.so.1");
    if (lib == nullptr) {  // Triton's words when a backend's libraries are missing
      const char* why = dlerror();
      return NotFound(std::string("unable to load backend library: ") +
                      (why != nullptr ? why : "libonnxruntime.so.1"));
    }
    using GetApiBaseFn = const OrtApiBase* (*)();
    auto get_base = reinterpret_cast<GetApiBaseFn>(dlsym(lib, "OrtGetApiBase"));
    const OrtApiBase* base = get_base != nullptr ? get_base() : nullptr;
    const OrtApi* api = base != nullptr ? base->GetApi(ORT_API_VERSION) : nullptr;
    if (api == nullptr) {
      return Unavailable(
          "onnxruntime backend: libonnxruntime.so.1 does not provide ONNX Runtime "
          "API version " +
          std::to_string(ORT_API_VERSION));
    }
    Ort::InitApi(api);
    return Status::Ok();
  }();
  return loaded;
}

template <typename F>
auto Guarded(std::string_view what, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const Ort::Exception& e) {
    return Internal(std::string(what) + ": " + e.what());
  } catch (const std::exception& e) {
    return Internal(std::string(what) + ": " + e.what());
  } catch (...) {
    return Internal(std::string(what) + ": unknown exception");
  }
}

// One loaded version: the settings and plan its instances share. The session opened to validate
// the model at load is handed to the first instance instead of being thrown away.
class OrtModel final : public backend::Model {
 public:
  OrtModel(std::shared_ptr<Ort::Env> env, std::string path, SessionSettings settings,
           std::shared_ptr<const ExecutionPlan> plan, Ort::Session first_session)
      : env_(std::move(env)),
        path_(std::move(path)),
        settings_(std::move(settings)),
        plan_(std::move(plan)),
        spare_session_(std::move(first_session)) {}

  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions& options) override {
    return Guarded("failed to create instance '" + options.name + "'",
                   [&]() -> StatusOr<std::unique_ptr<backend::ModelInstance>> {
                     Ort::Session session = TakeSpareSession();
                     if (session == nullptr) {
                       NEREID_ASSIGN_OR_RETURN(
                           session, OpenSession(*env_, plan_->model_name, path_, settings_));
                     }
                     return MakeOrtInstance(plan_, env_, std::move(session));
                   });
  }

 private:
  Ort::Session TakeSpareSession() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    return std::move(spare_session_);
  }

  const std::shared_ptr<Ort::Env> env_;  // declared first: destroyed after the spare session
  const std::string path_;
  const SessionSettings settings_;
  const std::shared_ptr<const ExecutionPlan> plan_;
  Mutex mu_;
  Ort::Session spare_session_ GUARDED_BY(mu_);  // null once taken
};

class OrtBackend final : public backend::Backend {
 public:
  OrtBackend() = default;

  backend::BackendInfo Info() const override {
    // Triton gives KIND_CPU groups of ONNX Runtime models two instances by default.
    return {"onnxruntime",
            {"onnxruntime_onnx"},
            "model.onnx",
            /*supports_auto_complete=*/true,
            /*default_cpu_instance_count=*/2};
  }

  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions& options) override {
    return Guarded("failed to auto-complete model '" + options.model_name + "'",
                   [&]() -> StatusOr<std::string> {
                     SessionSettings light;  // one thread, no graph work: only the IO is read
                     light.level = ORT_DISABLE_ALL;
                     NEREID_ASSIGN_OR_RETURN(std::shared_ptr<Ort::Env> env, Env());
                     NEREID_ASSIGN_OR_RETURN(
                         Ort::Session session,
                         OpenSession(*env, options.model_name, options.model_path, light));
                     NEREID_ASSIGN_OR_RETURN(ModelIo io, ReadModelIo(options.model_name, session));
                     return CompleteConfig(options.config_json, io, options.default_max_batch_size);
                   });
  }

  StatusOr<std::unique_ptr<backend::Model>> LoadModel(
      const backend::ModelLoadOptions& options) override {
    return Guarded("failed to load model '" + options.model_name + "'",
                   [&]() -> StatusOr<std::unique_ptr<backend::Model>> { return Load(options); });
  }

 private:
  StatusOr<std::unique_ptr<backend::Model>> Load(const backend::ModelLoadOptions& options) {
    NEREID_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(options.config_json));
    StatusOr<SessionSettings> settings = ReadSessionSettings(config);
    if (!settings.ok()) {
      return InvalidArgument("unable to load model '" + options.model_name + "', " +
                             settings.status().message());
    }
    NEREID_ASSIGN_OR_RETURN(std::shared_ptr<Ort::Env> env, Env());
    NEREID_ASSIGN_OR_RETURN(Ort::Session session,
                            OpenSession(*env, options.model_name, options.model_path, *settings));
    NEREID_ASSIGN_OR_RETURN(ModelIo io, ReadModelIo(options.model_name, session));
    NEREID_RETURN_IF_ERROR(ValidateModelIo(options.model_name, config, io));
    return std::unique_ptr<backend::Model>(
        std::make_unique<OrtModel>(std::move(env), options.model_path, std::move(settings).value(),
                                   MakePlan(options.model_name, config, io), std::move(session)));
  }

  // The one environment, created with the first model (ONNX Runtime mapped then).
  StatusOr<std::shared_ptr<Ort::Env>> Env() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (env_ == nullptr) {
      NEREID_RETURN_IF_ERROR(LoadOrtApi());
      // Created on a thread of its own, named for it: the telemetry thread ORT 1.30 starts with
      // its environment when a user turns telemetry back on (ORT_DISABLE_TELEMETRY=0; ADR 0021)
      // inherits the creator's name, and would otherwise pass for whichever server thread
      // happened to load the first ONNX model ("model-load", "load-api", main).
      std::shared_ptr<Ort::Env> env;
      std::exception_ptr failed;
      std::thread maker([&env, &failed] {
        pthread_setname_np(pthread_self(), "onnxruntime");
        try {
          env = std::make_shared<Ort::Env>(ORT_LOGGING_LEVEL_WARNING, "nereid",
                                           &LogRouter::Callback, nullptr);
        } catch (...) {
          failed = std::current_exception();
        }
      });
      maker.join();
      if (failed) std::rethrow_exception(failed);  // to Guarded
      env_ = std::move(env);
    }
    return env_;
  }

  Mutex mu_;
  std::shared_ptr<Ort::Env> env_ GUARDED_BY(mu_);
};

}  // namespace
}  // namespace nereid::backends::ort

NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
    const nereid::backend::BackendOptions* options, std::string* error) {
  using nereid::backends::ort::LogRouter;
  try {
    LogRouter::Get().Set(options != nullptr ? options->log : nullptr);
    return new nereid::backends::ort::OrtBackend();
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("onnxruntime backend: ") + e.what();
  } catch (...) {
    if (error != nullptr) *error = "onnxruntime backend: unknown exception";
  }
  return nullptr;
}
