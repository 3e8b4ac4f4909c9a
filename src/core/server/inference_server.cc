#include "core/server/inference_server.h"

#include <chrono>
#include <thread>

#include "common/logging.h"
#include "core/model/backend_registry.h"
#include "core/repository/model_repository.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// Extensions this build really implements, in Triton's order (REFERENCE.md §1.1).
std::vector<std::string> Extensions() {
  return {"sequence", "schedule_policy", "model_configuration", "binary_tensor_data", "parameters"};
}

int DefaultMaxBatchSize(const ServerOptions& options) {
  int value = 4;
  for (const auto& [backend, kv] : options.backend_config) {
    if (kv.first == "default-max-batch-size") {
      try {
        value = std::stoi(kv.second);
      } catch (...) {
        LOG_WARNING("ignoring non-numeric default-max-batch-size '{}'", kv.second);
      }
    }
  }
  return value;
}

}  // namespace

InferenceServer::InferenceServer(const ServerOptions& options,
                                 std::unique_ptr<ModelRepository> repository)
    : options_(options), repository_(std::move(repository)) {
  metadata_.name = options.server_id;
  metadata_.version = NEREID_VERSION;
  metadata_.extensions = Extensions();
}

InferenceServer::~InferenceServer() {
  repository_.reset();  // models before the backends whose code they run
  registry_.reset();
}

StatusOr<std::unique_ptr<InferenceServer>> InferenceServer::Create(const ServerOptions& options) {
  BackendRegistry::Options bo;
  bo.directory = options.backend_directory;
  for (const auto& [backend, kv] : options.backend_config) bo.config[backend].push_back(kv);
  NEREID_ASSIGN_OR_RETURN(std::unique_ptr<BackendRegistry> registry, BackendRegistry::Create(bo));

  ModelRepository::Options ro;
  for (const auto& r : options.model_repositories) ro.roots.emplace_back(r);
  ro.registry = registry.get();
  ro.resolve.model_config_name = options.model_config_name;
  ro.resolve.auto_complete = !options.disable_auto_complete;
  ro.resolve.default_max_batch_size = DefaultMaxBatchSize(options);
  ro.load_thread_count = options.model_load_thread_count;
  NEREID_ASSIGN_OR_RETURN(std::unique_ptr<ModelRepository> repo, ModelRepository::Create(ro));

  std::unique_ptr<InferenceServer> server(new InferenceServer(options, std::move(repo)));
  server->registry_ = std::move(registry);
  const std::vector<Status> errors = server->repository_->LoadAll();
  if (!errors.empty() && options.exit_on_error) {
    return Status(errors.front().code(),
                  "failed to load all models (" + std::to_string(errors.size()) +
                      " failed); first error: " + errors.front().message());
  }
  return server;
}

bool InferenceServer::IsLive() const { return !stopping_.load(std::memory_order_acquire); }

bool InferenceServer::IsReady() const {
  if (stopping_.load(std::memory_order_acquire)) return false;
  return !options_.strict_readiness || repository_->AllReady();
}

StatusOr<bool> InferenceServer::ModelIsReady(const std::string& name, int64_t version) const {
  return repository_->IsReady(name, version);
}

StatusOr<ModelMetadata> InferenceServer::GetModelMetadata(const std::string& name,
                                                          int64_t version) const {
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<ModelVersion> model, repository_->Get(name, version));
  const inference::ModelConfig& config = *model->config();
  ModelMetadata md;
  md.name = name;
  if (version >= 0) {
    md.versions.push_back(std::to_string(version));
  } else {
    for (int64_t v : repository_->ReadyVersions(name)) md.versions.push_back(std::to_string(v));
  }
  md.platform = config.platform().empty() ? config.backend() : config.platform();
  const ModelInfo& info = model->info();
  auto add = [&](const TensorSpec& spec, std::vector<TensorMetadata>* out) {
    TensorMetadata t{spec.name, std::string(DataTypeWireName(spec.data_type)), spec.dims};
    if (info.max_batch_size > 0) t.shape.insert(t.shape.begin(), -1);
    out->push_back(std::move(t));
  };
  for (const auto& spec : info.inputs) add(spec, &md.inputs);
  for (const auto& spec : info.outputs) add(spec, &md.outputs);
  return md;
}

StatusOr<std::shared_ptr<const inference::ModelConfig>> InferenceServer::GetModelConfig(
    const std::string& name, int64_t version) const {
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<ModelVersion> model, repository_->Get(name, version));
  return model->config();
}

StatusOr<std::shared_ptr<const std::string>> InferenceServer::GetModelConfigJson(
    const std::string& name, int64_t version) const {
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<ModelVersion> model, repository_->Get(name, version));
  return model->config_json();
}

void InferenceServer::InferAsync(std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                                 const InferOptions& options) {
  if (stopping_.load(std::memory_order_acquire)) {
    done(Unavailable("Server is stopping; no new inference requests are accepted"));
    return;
  }
  auto model = repository_->Get(request->model_name, request->model_version);
  if (!model.ok()) {
    done(model.status());
    return;
  }
  request->received_at = std::chrono::steady_clock::now();
  inflight_.fetch_add(1, std::memory_order_acq_rel);
  ModelVersion::Infer(*model, std::move(request),
                      [this, done = std::move(done)](
                          StatusOr<std::unique_ptr<InferenceResponse>> result) mutable {
                        done(std::move(result));
                        inflight_.fetch_sub(1, std::memory_order_acq_rel);
                      },
                      options.allow_inline);
}

bool InferenceServer::Stop() {
  stopping_.store(true, std::memory_order_release);
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.exit_timeout_secs);
  bool drained = true;
  while (inflight_.load(std::memory_order_acquire) > 0) {
    if (std::chrono::steady_clock::now() >= deadline) {
      LOG_WARNING("Exit timeout expired. Exiting immediately.");
      drained = false;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (drained) repository_->UnloadAll();
  return drained;
}

}  // namespace nereid
