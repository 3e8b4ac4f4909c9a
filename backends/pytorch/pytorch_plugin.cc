// The pytorch backend plugin (libnereid_pytorch.so): TorchScript models, `platform:
// "pytorch_libtorch"` or `backend: "pytorch"`, default file model.pt. This library does not link
// LibTorch: it answers Info and auto-complete itself and loads the runtime library
// (runtime_api.h) on the first LoadModel, so servers without TorchScript models never map libtorch.
//
// Thread-safety: every method may be called concurrently; the runtime is loaded once under a mutex
// and never unloaded (libtorch's process-wide state does not survive dlclose).
#include <dlfcn.h>

#include <exception>
#include <filesystem>
#include <memory>
#include <string>

#include "common/thread_annotations.h"
#include "nereid/backend_api.h"
#include "pytorch/runtime_api.h"

namespace nereid::backends::pytorch {
namespace {

// The directory this plugin was loaded from.
std::filesystem::path PluginDirectory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&PluginDirectory), &info) == 0 || info.dli_fname == nullptr) {
    return {};
  }
  return std::filesystem::path(info.dli_fname).parent_path();
}

class PytorchBackend final : public backend::Backend {
 public:
  explicit PytorchBackend(backend::BackendOptions options) : options_(std::move(options)) {}

  backend::BackendInfo Info() const override {
    return {"pytorch",
            {"pytorch_libtorch"},
            "model.pt",
            /*supports_auto_complete=*/true,
            /*default_cpu_instance_count=*/1};
  }

  // TorchScript files do not describe their tensors, so, like Triton, nothing is completed: the
  // configuration comes back as given (a missing one then fails at load for lack of inputs).
  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions& options) override {
    try {
      if (options_.log) {
        options_.log(backend::LogLevel::kWarning,
                     "skipping model configuration auto-complete for '" + options.model_name +
                         "': not supported for pytorch backend");
      }
      return options.config_json;
    } catch (const std::exception& e) {
      return Internal("pytorch backend: " + std::string(e.what()));
    }
  }

  StatusOr<std::unique_ptr<backend::Model>> LoadModel(
      const backend::ModelLoadOptions& options) override {
    try {
      NEREID_ASSIGN_OR_RETURN(backend::Backend * runtime, Runtime());
      return runtime->LoadModel(options);  // catches everything itself
    } catch (const std::exception& e) {
      return Internal("pytorch backend: " + std::string(e.what()));
    }
  }

 private:
  StatusOr<backend::Backend*> Runtime() EXCLUDES(mu_) {
    MutexLock lock(mu_);
    if (runtime_ == nullptr && runtime_error_.ok()) runtime_error_ = LoadRuntime();
    if (!runtime_error_.ok()) return runtime_error_;
    return runtime_.get();
  }

  Status LoadRuntime() REQUIRES(mu_) {
    const std::string path = (PluginDirectory() / kNereidTorchRuntimeFile).string();
    // Never closed: models and instances it creates outlive any point where closing is safe.
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const char* why = dlerror();
      return Unavailable("pytorch backend: cannot load its runtime '" + path +
                         "': " + (why != nullptr ? why : "unknown error"));
    }
    auto version = reinterpret_cast<NereidTorchRuntimeApiVersionFn>(
        dlsym(handle, "NereidTorchRuntimeApiVersion"));
    auto create =
        reinterpret_cast<NereidTorchRuntimeCreateFn>(dlsym(handle, "NereidTorchRuntimeCreate"));
    if (version == nullptr || create == nullptr || version() != backend::kBackendApiVersion) {
      return Unavailable("pytorch backend: runtime '" + path +
                         "' lacks the entry points or was built for another backend API");
    }
    std::string error;
    runtime_.reset(create(&options_, &error));
    if (runtime_ == nullptr) return Unavailable("pytorch backend: " + error);
    if (options_.log) options_.log(backend::LogLevel::kInfo, "loaded LibTorch runtime " + path);
    return Status::Ok();
  }

  const backend::BackendOptions options_;
  Mutex mu_;
  std::unique_ptr<backend::Backend> runtime_ GUARDED_BY(mu_);  // set once
  Status runtime_error_ GUARDED_BY(mu_);                       // a failed load is final
};

}  // namespace
}  // namespace nereid::backends::pytorch

NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
    const nereid::backend::BackendOptions* options, std::string* error) {
  try {
    return new nereid::backends::pytorch::PytorchBackend(
        options != nullptr ? *options : nereid::backend::BackendOptions{});
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("pytorch backend: ") + e.what();
  } catch (...) {
    if (error != nullptr) *error = "pytorch backend: unknown exception";
  }
  return nullptr;
}
