// The Python backend plugin (backend: "python"): Triton's model.py contract. This file holds the
// backend (settings, auto-complete, model loading) and the model; each instance runs model.py in
// a stub process of its own (python_instance.h), speaking stub_protocol.h. See
// docs/python_backend.md.
//
// Thread-safety: PythonBackend and PythonModel are immutable after construction (python_instance.cc
// says how an instance is shared between Execute and its watcher thread).
#include <dlfcn.h>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "common/config_json.h"
#include "common/config_reader.h"
#include "nereid/backend_api.h"
#include "python/execution_env.h"
#include "python/python_instance.h"
#include "python/python_shared.h"
#include "python/stub_process.h"
#include "python/stub_protocol.h"

namespace nereid::backends::python {
namespace {

// The folder of libnereid_python.so: its resources live in "<dir>/python".
std::string ResourcesDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ResourcesDir), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return (std::filesystem::path(info.dli_fname).parent_path() / "python").string();
}

class PythonModel final : public backend::Model {
 public:
  explicit PythonModel(std::shared_ptr<const ModelShared> shared) : shared_(std::move(shared)) {}

  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions& options) override {
    try {
      return StartPythonInstance(shared_, options);
    } catch (const std::exception& e) {
      return Internal(std::string("python backend: ") + e.what());
    }
  }

  // The decoupled requests the instances still hold end now (python_instance.cc).
  void Unloading() override { shared_->unload->Notify(); }

 private:
  const std::shared_ptr<const ModelShared> shared_;
};

class PythonBackend final : public backend::Backend {
 public:
  PythonBackend(std::shared_ptr<const Settings> settings, std::string resources)
      : settings_(std::move(settings)), resources_(std::move(resources)) {}

  std::vector<backend::MetricFamilySnapshot> MetricFamilies() const override {
    return settings_->metrics->Snapshot();
  }

  backend::BackendInfo Info() const override {
    backend::BackendInfo info;
    info.name = "python";
    info.default_model_filename = "model.py";
    info.wants_request_info = true;  // execute() gets one request object per request
    info.supports_auto_complete = true;
    return info;
  }

  // Runs TritonPythonModel.auto_complete_config in a short-lived stub (as Triton does).
  StatusOr<std::string> AutoCompleteConfig(const backend::AutoCompleteOptions& options) override {
    try {
      rapidjson::Document config;
      NEREID_RETURN_IF_ERROR(ParseJsonObject(options.config_json, "model configuration", &config));
      const std::string model_dir =
          std::filesystem::path(options.model_path).parent_path().parent_path().string();
      NEREID_ASSIGN_OR_RETURN(std::string env, ExecutionEnvPath(config, model_dir));
      NEREID_ASSIGN_OR_RETURN(
          std::unique_ptr<StubProcess> stub,
          StubProcess::Start({kPython, resources_ + "/nereid_python_stub.py", resources_,
                              options.model_path, 0, 0, std::move(env)}));
      rapidjson::Document doc(rapidjson::kObjectType);
      auto& a = doc.GetAllocator();
      doc.AddMember("op", "auto_complete", a);
      doc.AddMember("config", rapidjson::Value(options.config_json.c_str(), a), a);
      doc.AddMember("model_name", rapidjson::Value(options.model_name.c_str(), a), a);
      NEREID_RETURN_IF_ERROR(stub->Write(WriteJson(doc), {}));
      const auto deadline = std::chrono::steady_clock::now() + settings_->stub_timeout;
      while (true) {
        StatusOr<Frame> f = stub->Read(deadline);
        if (!f.ok()) {
          return Internal("Stub process for auto-complete of model '" + options.model_name +
                          "' is not healthy.");
        }
        NEREID_ASSIGN_OR_RETURN(StubMessage m, ParseStubMessage(f->json, f->payload.size()));
        if (m.op == "log") {
          Log(*settings_, StubLogLevel(m.level), m.message);
        } else if (m.op == "config") {
          stub->WaitOrKill(std::chrono::milliseconds(2000));
          return m.config;
        } else {
          return Internal(m.message);
        }
      }
    } catch (const std::exception& e) {
      return Internal(std::string("python backend: ") + e.what());
    }
  }

  StatusOr<std::unique_ptr<backend::Model>> LoadModel(
      const backend::ModelLoadOptions& options) override {
    try {
      NEREID_ASSIGN_OR_RETURN(ModelConfig config, ParseModelConfig(options.config_json));
      rapidjson::Document doc;
      NEREID_RETURN_IF_ERROR(ParseJsonObject(options.config_json, "model configuration", &doc));
      auto shared = std::make_shared<ModelShared>();
      shared->model_name = options.model_name;
      shared->config_json = options.config_json;
      shared->model_dir = options.model_dir;
      shared->version = options.version;
      shared->settings = settings_;
      if (const rapidjson::Value* p = FindMember(doc, "model_transaction_policy")) {
        const rapidjson::Value* d = FindMember(*p, "decoupled");
        shared->decoupled = d != nullptr && d->IsBool() && d->GetBool();
      }
      for (const IoConfig& o : config.outputs) shared->outputs.push_back(o.name);
      NEREID_ASSIGN_OR_RETURN(std::string env, ExecutionEnvPath(doc, options.model_dir));
      shared->command = {kPython,
                         resources_ + "/nereid_python_stub.py",
                         resources_,
                         options.model_path,
                         settings_->shm_default_size,
                         settings_->shm_growth_size,
                         std::move(env)};
      if (!std::filesystem::exists(options.model_path)) {
        return NotFound("failed to load model '" + options.model_name + "': model file '" +
                        options.model_path + "' not found");
      }
      return std::unique_ptr<backend::Model>(std::make_unique<PythonModel>(std::move(shared)));
    } catch (const std::exception& e) {
      return Internal("failed to load model '" + options.model_name + "': " + e.what());
    }
  }

 private:
  const std::shared_ptr<const Settings> settings_;
  const std::string resources_;
};

// `--backend-config=python,<key>=<value>`: Triton's keys, values and error texts (the shm keys
// size each stub's shared-memory pool, shm_pool.h).
StatusOr<std::shared_ptr<const Settings>> ReadSettings(const backend::BackendOptions* options) {
  auto settings = std::make_shared<Settings>();
  if (options == nullptr) return std::shared_ptr<const Settings>(settings);
  settings->log = options->log;
  settings->infer = options->infer;
  settings->control = options->model_control;
  for (const auto& [key, value] : options->config) {
    const bool known = key == "stub-timeout-seconds" || key == "shm-default-byte-size" ||
                       key == "shm-growth-byte-size";
    if (!known) continue;
    // Triton reads these with std::stol: a value that does not start with a number gives
    // std::invalid_argument's text, "stol".
    const bool numeric =
        !value.empty() && value.size() < 19 && std::all_of(value.begin(), value.end(), ::isdigit);
    if (!numeric && !(value.size() > 1 && value[0] == '-' &&
                      std::all_of(value.begin() + 1, value.end(), ::isdigit))) {
      return InvalidArgument("stol");
    }
    const int64_t n = value.size() < 19 ? std::stoll(value) : 0;
    if (key == "stub-timeout-seconds") {
      if (n <= 0) {
        return InvalidArgument("stub-timeout-seconds can't be smaller than or equal to zero.");
      }
      settings->stub_timeout = std::chrono::seconds(n);
    } else if (key == "shm-default-byte-size") {
      if (n < (1 << 20))
        return InvalidArgument("shm-default-byte-size can't be smaller than 4 MiBs");
      settings->shm_default_size = static_cast<uint64_t>(n);
    } else if (n <= 0) {
      return InvalidArgument("shm-growth-byte-size can't be smaller than or equal to zero.");
    } else {
      settings->shm_growth_size = static_cast<uint64_t>(n);
    }
  }
  return std::shared_ptr<const Settings>(settings);
}

}  // namespace
}  // namespace nereid::backends::python

NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion() {
  return nereid::backend::kBackendApiVersion;
}

NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
    const nereid::backend::BackendOptions* options, std::string* error) {
  using namespace nereid::backends::python;
  try {
    auto settings = ReadSettings(options);
    if (!settings.ok()) {
      if (error != nullptr) *error = std::string(settings.status().message());
      return nullptr;
    }
    return new PythonBackend(*settings, ResourcesDir());
  } catch (const std::exception& e) {
    if (error != nullptr) *error = std::string("python backend: ") + e.what();
  }
  return nullptr;
}
