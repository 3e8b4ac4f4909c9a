#include "core/server/inference_server.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "common/error_text.h"
#include "common/logging.h"
#include "common/parse_number.h"
#include "core/model/backend_registry.h"
#include "core/model/classification.h"
#include "core/repository/model_repository.h"
#include "core/repository/repository_poller.h"
#include "core/server/plugin_infer.h"
#include "core/server/request_completion.h"
#include "core/server/task_pool.h"
#include "core/shm/shm_tensors.h"
#include "core/stats/library_pages.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// Extensions this build really implements, in Triton's order (REFERENCE.md §1.1).
std::vector<std::string> Extensions() {
  // One per line, so a new extension is a one-line change.
  // clang-format off
  return {"classification",
          "sequence",
          "model_repository",
          "model_repository(unload_dependents)",
          "schedule_policy",
          "model_configuration",
          "system_shared_memory",
          "cuda_shared_memory",
          "binary_tensor_data",
          "parameters",
          "statistics",
          "trace",
          "logging"};
}

int DefaultMaxBatchSize(const ServerOptions& options) {
  int value = 4;
  for (const auto& [backend, kv] : options.backend_config) {
    if (kv.first == "default-max-batch-size") {
      // The command line refuses anything else; options built in code are checked here too.
      if (auto number = ParseInteger<int>(kv.second); number && *number >= 0) {
        value = *number;
      } else {
        LOG_WARNING("ignoring default-max-batch-size '{}': not a non-negative integer", kv.second);
      }
    }
  }
  return value;
}

}  // namespace

InferenceServer::InferenceServer(const ServerOptions& options,
                                 std::unique_ptr<ModelRepository> repository)
    : options_(options),
      repository_(std::move(repository)),
      shared_memory_(std::make_unique<SharedMemoryManager>(
          SharedMemoryManager::Options{options.allow_client_shm})) {
  metadata_.name = options.server_id;
  metadata_.version = NEREID_VERSION;
  metadata_.extensions = Extensions();
}

InferenceServer::~InferenceServer() {
  if (plugin_infer_ != nullptr) plugin_infer_->Detach();  // before the models calling it go
  trace_->Shutdown();  // writes what was collected; the frontends are gone by now
  poller_.reset();
  load_pool_.reset();   // waits for loads in progress
  repository_.reset();  // models before the backends whose code they run
  registry_.reset();
}

StatusOr<std::unique_ptr<InferenceServer>> InferenceServer::Create(const ServerOptions& options) {
  BackendRegistry::Options bo;
  bo.directory = options.backend_directory;
  for (const auto& [backend, kv] : options.backend_config) bo.config[backend].push_back(kv);
  auto plugin_infer = std::make_shared<PluginInferGate>();
  bo.infer = plugin_infer->Function();
  bo.model_control = plugin_infer->Control();
  NEREID_ASSIGN_OR_RETURN(std::unique_ptr<BackendRegistry> registry, BackendRegistry::Create(bo));

  ModelRepository::Options ro;
  for (const auto& r : options.model_repositories) ro.roots.emplace_back(r);
  ro.registry = registry.get();
  ro.resolve.model_config_name = options.model_config_name;
  ro.resolve.auto_complete = !options.disable_auto_complete;
  ro.resolve.default_max_batch_size = DefaultMaxBatchSize(options);
  ro.load_thread_count = options.model_load_thread_count;
  ro.max_sequence_backlog_size = options.max_sequence_backlog_size;
  ro.latency_observers = options.latency_observers;
  ro.response_cache = options.response_cache;
  NEREID_ASSIGN_OR_RETURN(std::unique_ptr<ModelRepository> repo, ModelRepository::Create(ro));
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<trace::TraceManager> tracer,
                          trace::TraceManager::Create(options.trace));

  std::unique_ptr<InferenceServer> server(new InferenceServer(options, std::move(repo)));
  server->trace_ = std::move(tracer);
  server->registry_ = std::move(registry);
  server->plugin_infer_ = plugin_infer;
  plugin_infer->Attach(server.get());
  server->load_pool_ = std::make_unique<TaskPool>(options.model_load_thread_count, "load-api");
  const std::vector<Status> errors = server->LoadAtStart();
  if (!errors.empty() && options.exit_on_error) {
    return Status(errors.front().code(), "failed to load all models (" +
                                             std::to_string(errors.size()) +
                                             " failed); first error: " + errors.front().message());
  }
  return server;
}

std::vector<Status> InferenceServer::LoadAtStart() {
  switch (options_.model_control_mode) {
    case ModelControlMode::kNone:
      return repository_->LoadAll();
    case ModelControlMode::kPoll: {
      RepositoryPoller::Options po;
      po.interval_secs = std::max(0, options_.repository_poll_secs);
      po.load_thread_count = options_.model_load_thread_count;
      if (options_.release_library_pages_after_load) {
        po.after_loads = [] { ReleaseReadOnlyLibraryPages(); };
      }
      poller_ = std::make_unique<RepositoryPoller>(repository_.get(), po);
      poller_->Prime();
      std::vector<Status> errors = repository_->LoadAll();
      if (po.interval_secs > 0) poller_->Start();
      return errors;
    }
    case ModelControlMode::kExplicit: {
      std::vector<std::string> names = options_.startup_models;
      if (names.size() == 1 && names.front() == "*") {
        names.clear();
        for (const auto& [name, dirs] : repository_->ListModelDirs()) names.push_back(name);
      }
      return repository_->LoadNamed(names);
    }
  }
  return {};
}

std::vector<LoadError> InferenceServer::RecentLoadErrors() const {
  return repository_->RecentLoadErrors();
}

std::vector<RepositoryIndexEntry> InferenceServer::RepositoryIndex(bool ready_only) const {
  std::vector<RepositoryIndexEntry> out;
  for (const ModelStatus& m : repository_->Index(ready_only)) {
    if (m.versions.empty()) out.push_back({m.name, -1, "", ""});
    for (const VersionStatus& v : m.versions) {
      out.push_back({m.name, v.version, ModelStateName(v.state), v.reason});
    }
  }
  return out;
}

namespace {
Status ModelControlDisabled() {
  return Unavailable("explicit model load / unload is not allowed if polling is enabled");
}
}  // namespace

void InferenceServer::LoadModelAsync(const std::string& name, ModelLoadParameters&& params,
                                     std::function<void(Status)> done) {
  if (options_.model_control_mode != ModelControlMode::kExplicit) {
    return done(ModelControlDisabled());
  }
  if (admission_->closed()) {
    return done(Unavailable("Server is stopping; models can no longer be loaded"));
  }
  load_pool_->Submit([this, name, params = std::move(params), done = std::move(done)] {
    Status loaded = repository_->Load(name, params);
    // Before the reply, so that a client that sees the load done sees its memory settled too.
    if (options_.release_library_pages_after_load) ReleaseReadOnlyLibraryPages();
    done(std::move(loaded));
  });
}

Status InferenceServer::UnloadModel(const std::string& name, bool unload_dependents) {
  if (options_.model_control_mode != ModelControlMode::kExplicit) return ModelControlDisabled();
  return repository_->Unload(name, unload_dependents);
}

bool InferenceServer::PollRepositoryNow() {
  if (!poller_) return false;
  if (options_.repository_poll_secs > 0) {
    poller_->Trigger();
  } else {
    LOG_INFO("rescanning the model repository (SIGHUP)");
    poller_->ScanOnce();
  }
  return true;
}

bool InferenceServer::IsLive() const { return !admission_->closed(); }

bool InferenceServer::IsReady() const {
  if (admission_->closed()) return false;
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

namespace {

ModelVersionStatistics StatisticsOf(const std::string& name, const ModelVersion& model) {
  ModelVersionStatistics out;
  out.name = name;
  out.version = model.version();
  out.stats = model.stats().Snapshot();
  out.health = model.health().counts();
  const inference::ModelConfig& config = *model.config();
  out.metric_tags.assign(config.metric_tags().begin(), config.metric_tags().end());
  std::sort(out.metric_tags.begin(), out.metric_tags.end());
  return out;
}

}  // namespace

StatusOr<std::vector<ModelVersionStatistics>> InferenceServer::GetModelStatistics(
    const std::string& name, int64_t version) const {
  std::vector<ModelVersionStatistics> out;
  if (name.empty()) {
    for (const auto& [model_name, model] : repository_->ReadyModels()) {
      out.push_back(StatisticsOf(model_name, *model));
    }
    return out;
  }
  const std::vector<int64_t> ready = repository_->ReadyVersions(name);
  if (ready.empty())
    return InvalidArgument("requested model '" + ClientText(name) + "' is not available");
  for (int64_t v : ready) {
    if (version >= 0 && v != version) continue;
    // The version may be unloaded between the two lookups; it is then simply not reported.
    auto model = repository_->Get(name, v);
    if (model.ok()) out.push_back(StatisticsOf(name, **model));
  }
  if (version >= 0 && out.empty()) {
    return InvalidArgument("requested model version is not available for model '" +
                           ClientText(name) + "'");
  }
  return out;
}

std::vector<backend::MetricFamilySnapshot> InferenceServer::BackendMetricFamilies() const {
  return registry_ != nullptr ? registry_->BackendMetricFamilies()
                              : std::vector<backend::MetricFamilySnapshot>();
}

const inference::ModelConfig& ServedModel::config() const { return *model_->config(); }

int64_t ServedModel::version() const { return model_->version(); }

StatusOr<ServedModel> InferenceServer::AcquireModel(const std::string& name,
                                                    int64_t version) const {
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<ModelVersion> model, repository_->Get(name, version));
  return ServedModel(std::move(model));
}

void InferenceServer::InferAsync(std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                                 const InferOptions& options) {
  auto model = AcquireModel(request->model_name, request->model_version);
  if (!model.ok()) {
    done(model.status());
    return;
  }
  InferAsync(std::move(*model), std::move(request), std::move(done), options);
}

void InferenceServer::InferAsync(ServedModel model, std::unique_ptr<InferenceRequest>&& request,
                                 InferCallback done, const InferOptions& options) {
  std::optional<Admission::Ticket> ticket = admission_->Enter();
  if (!ticket) {
    done(Unavailable("Server is stopping; no new inference requests are accepted"));
    return;
  }
  request->received_at = std::chrono::steady_clock::now();
  request->server_stop = stop_token_;
  if (!options.trace_sampled && trace_->MaybeEnabled() && request->trace == nullptr) {
    request->trace = trace_->Sample(request->model_name);
  }
  StatusOr<ShmOutputTargets> shm = ResolveShmTensors(*shared_memory_, request.get());
  if (!shm.ok()) {
    done(shm.status());
    return;
  }
  // One object carries the ticket, the version and the output targets until the result is handed
  // over (request_completion.h): the request is counted until nothing of it can run any more, and
  // output regions stay pinned until then too. Nothing of it refers to `this`. `model` itself
  // holds the version until this call returns (the scheduler is touched after a queued job may
  // already have completed on an executor).
  const bool classify = WantsClassification(*request);
  model.model_->InferHeld(std::move(request),
                          MakeRequestCompletion(std::move(*ticket), model.model_, classify,
                                                std::move(*shm), std::move(done)),
                          options.allow_inline);
}

void InferenceServer::NoticeStop() {
  for (const auto& [name, version] : repository_->ReadyModels()) version->Unloading();
}

bool InferenceServer::Stop(std::chrono::steady_clock::time_point deadline,
                           std::chrono::milliseconds grace) {
  admission_->Close();
  if (poller_) poller_->Stop();
  NoticeStop();
  bool drained = admission_->WaitDrained(deadline);
  if (!drained) {
    LOG_WARNING(
        "Exit timeout expired: answering the {} request(s) still queued and waiting up to "
        "{} ms for the executions still running",
        admission_->inflight(), grace.count());
    stop_token_->Cancel();
    drained = admission_->WaitDrained(std::chrono::steady_clock::now() + grace);
  }
  if (drained) {
    repository_->UnloadAll();
  } else {
    LOG_WARNING("Exit timeout expired. Exiting immediately: {} execution(s) still running",
                admission_->inflight());
  }
  return drained;
}

}  // namespace nereid
