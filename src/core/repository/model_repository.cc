#include "core/repository/model_repository.h"

#include <algorithm>
#include <optional>
#include <thread>

#include "common/error_text.h"
#include "common/logging.h"
#include "common/thread_name.h"
#include "core/config/model_config_json.h"
#include "core/repository/model_name.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// Lets go of versions no longer served: each gets the unload notice (backend API v6) before its
// requests in flight are waited for, then the last reference hands it to the reaper.
void LetGo(std::vector<std::shared_ptr<ModelVersion>>& dropping) {
  for (const auto& version : dropping) {
    if (version != nullptr) version->Unloading();
  }
  dropping.clear();
}

Status LoadFailed(const std::string& name, const std::string& message) {
  return InvalidArgument("load failed for model '" + name + "': " + message);
}

// A load override that cannot be applied, with the prefix Triton's repository manager gives every
// error found while it polls the model ("failed to load 'm', ...").
Status OverrideFailed(const std::string& name, const Status& why) {
  return Status(why.code(), "failed to load '" + name + "', " + why.message());
}

Status NotInRepository(const std::string& name) {
  return Internal("failed to load '" + name + "', failed to poll from model repository");
}

// Moves a slot, logging an illegal move (a repository bug) instead of applying it.
void Move(const std::string& name, int64_t version, VersionLifecycle& life, VersionState to,
          std::string reason = "") {
  if (Status s = life.MoveTo(to, std::move(reason)); !s.ok()) {
    LOG_ERROR("model '{}' version {}: {}", name, version, s.message());
  }
}

// What Triton reports for a version: UNAVAILABLE for a failed load (with its error) and for an
// unloaded version ("unloaded").
// A ready version none of whose instances can serve (a restarting python stub) is UNAVAILABLE
// with the backend's reason (ADR 0015), and so is one whose instance's own readiness check fails
// (a python model's is_ready(), backend API v6).
VersionStatus Report(int64_t version, const VersionLifecycle& life,
                     const std::shared_ptr<ModelVersion>& model) {
  switch (life.state()) {
    case VersionState::kLoading:
      return {version, ModelState::kLoading, ""};
    case VersionState::kReady:
      if (model != nullptr) {
        if (std::optional<std::string> why = model->UnavailableReason()) {
          return {version, ModelState::kUnavailable, std::move(*why)};
        }
      }
      return {version, ModelState::kReady, ""};
    case VersionState::kFailed:
      return {version, ModelState::kUnavailable, life.reason()};
    case VersionState::kUnloading:
      return {version, ModelState::kUnloading, ""};
    case VersionState::kUnloaded:
      return {version, ModelState::kUnavailable, "unloaded"};
    case VersionState::kNone:
      break;
  }
  return {version, ModelState::kUnknown, ""};
}

}  // namespace

const char* ModelStateName(ModelState state) {
  switch (state) {
    case ModelState::kReady:
      return "READY";
    case ModelState::kUnavailable:
      return "UNAVAILABLE";
    case ModelState::kLoading:
      return "LOADING";
    case ModelState::kUnloading:
      return "UNLOADING";
    case ModelState::kUnknown:
      break;
  }
  return "UNKNOWN";
}

ModelRepository::ModelRepository(const Options& options) : options_(options) {}

StatusOr<std::unique_ptr<ModelRepository>> ModelRepository::Create(const Options& options) {
  if (options.roots.empty()) return InvalidArgument("--model-repository must be specified");
  for (const auto& root : options.roots) {
    std::error_code ec;
    if (!std::filesystem::is_directory(root, ec)) {
      return InvalidArgument("failed to stat repository '" + root.string() +
                             "': not a readable directory");
    }
  }
  std::unique_ptr<ModelRepository> repo(new ModelRepository(options));
  repo->serving_.store(std::make_shared<const ServingTable>());
  return repo;
}

ModelRepository::~ModelRepository() {
  UnloadAll();
  // Waits for the versions requests still hold (their releases still reach OnReleased, so every
  // member stays alive until then), destroys them all on the reaper thread and joins it.
  reaper_.Shutdown();
}

std::map<std::string, std::vector<std::filesystem::path>> ModelRepository::ListModelDirs() const {
  std::map<std::string, std::vector<std::filesystem::path>> found;
  for (const auto& root : options_.roots) {
    std::error_code ec;
    // increment(ec) rather than range-for: a directory changing under the scan must not throw.
    for (std::filesystem::directory_iterator it(root, ec), end; !ec && it != end;
         it.increment(ec)) {
      std::error_code ec2;
      if (!it->is_directory(ec2)) continue;
      const std::string name = it->path().filename().string();
      if (!ValidateModelName(name).ok()) continue;
      found[name].push_back(it->path());
    }
    if (ec) LOG_ERROR("failed to poll model repository '{}': {}", root.string(), ec.message());
  }
  return found;
}

std::shared_ptr<Mutex> ModelRepository::LoadMutex(const std::string& name) {
  MutexLock lock(mu_);
  auto& m = load_mutexes_[name];
  if (!m) m = std::make_shared<Mutex>();
  return m;
}

std::vector<Status> ModelRepository::LoadParallel(const std::vector<std::string>& names) {
  std::vector<Status> errors;
  std::atomic<size_t> next{0};
  Mutex errors_mu;  // guards errors
  auto worker = [&] {
    for (size_t i = next++; i < names.size(); i = next++) {
      Status s = Load(names[i], {});
      if (!s.ok()) {
        MutexLock lock(errors_mu);
        errors.push_back(std::move(s));
      }
    }
  };
  const size_t n = std::min<size_t>(std::max(1, options_.load_thread_count), names.size());
  std::vector<std::thread> threads;
  for (size_t i = 1; i < n; ++i) {
    threads.push_back(StartNamedThread("model-load", [&worker] { worker(); }));
  }
  worker();
  for (auto& t : threads) t.join();
  return errors;
}

std::vector<Status> ModelRepository::LoadAll() {
  std::vector<Status> errors;
  std::vector<std::string> names;
  std::vector<std::string> ensembles;  // after the others, one at a time (ensemble_loading.cc)
  for (const auto& [name, dirs] : ListModelDirs()) {
    if (dirs.size() > 1) {
      MarkDuplicate(name);
      errors.push_back(Recorded(
          name, Unavailable("model '" + name + "': model appears in two or more repositories")));
      continue;
    }
    (IsEnsembleDir(dirs.front()) ? ensembles : names).push_back(name);
  }
  for (Status& s : LoadParallel(names)) errors.push_back(std::move(s));
  for (const std::string& name : ensembles) {
    {
      MutexLock lock(mu_);
      auto it = models_.find(name);
      // Already loaded (or failed) as a composing model of an ensemble loaded before it.
      if (it != models_.end() && (!it->second.versions.empty() || !it->second.failure.empty())) {
        continue;
      }
    }
    Status s = Load(name, {});
    if (!s.ok()) errors.push_back(std::move(s));
  }
  return errors;
}

std::vector<Status> ModelRepository::LoadNamed(const std::vector<std::string>& names) {
  return LoadParallel(names);
}

Status ModelRepository::Recorded(const std::string& name, Status status) {
  if (!status.ok()) load_errors_.Record(name, status.message());
  return status;
}

Status ModelRepository::Load(const std::string& name, const ModelLoadParameters& params) {
  return Recorded(name, LoadUnrecorded(name, params));
}

Status ModelRepository::LoadUnrecorded(const std::string& name, const ModelLoadParameters& params) {
  NEREID_RETURN_IF_ERROR(ValidateModelName(name));
  {
    MutexLock lock(mu_);
    auto it = models_.find(name);
    if (it != models_.end()) it->second.implicit = false;  // asked for by name now
  }
  LoadPlan plan;
  if (!params.files.empty() && !params.config_json) {
    return OverrideFailed(name, InvalidArgument("Load parameter 'config' must be specified for "
                                                "model file override"));
  }
  if (params.config_json) {
    auto parsed = config::ModelConfigFromJson(*params.config_json);
    if (!parsed.ok()) {
      return OverrideFailed(
          name, InvalidArgument("Invalid config override: " + parsed.status().message()));
    }
    plan.override_config = std::make_shared<const inference::ModelConfig>(std::move(*parsed));
  }
  if (!params.files.empty()) {
    auto temp = TempModelDir::Create(params.files);
    if (!temp.ok()) return OverrideFailed(name, temp.status());
    plan.temp = std::move(*temp);
    plan.dir = plan.temp->path();
  } else {
    auto dirs = ListModelDirs();
    auto it = dirs.find(name);
    if (it == dirs.end()) {
      LOG_ERROR("failed to poll model '{}': model not found in any model repository.", name);
      return NotInRepository(name);
    }
    if (it->second.size() > 1) {
      MarkDuplicate(name);
      LOG_ERROR("failed to poll model '{}': not unique across all model repositories", name);
      return NotInRepository(name);
    }
    plan.dir = it->second.front();
  }
  return LoadAndRevalidate(name, plan);
}

Status ModelRepository::ReloadFromDirectory(const std::string& name,
                                            const std::filesystem::path& dir,
                                            const std::set<int64_t>& reusable) {
  LoadPlan plan;
  plan.dir = dir;
  plan.reusable = reusable;
  return Recorded(name, LoadAndRevalidate(name, plan));
}

Status ModelRepository::LoadAndRevalidate(const std::string& name, const LoadPlan& plan) {
  Status s = LoadWithPlan(name, plan);
  if (s.ok()) RevalidateDependents(name);
  return s;
}

Status ModelRepository::LoadWithPlan(const std::string& name, const LoadPlan& plan) {
  const std::shared_ptr<Mutex> load_mu = LoadMutex(name);
  MutexLock serialize(*load_mu);
  uint64_t epoch = 0;
  std::set<int64_t> serving;
  {
    MutexLock lock(mu_);
    ModelEntry& entry = models_[name];
    entry.forgotten = false;
    epoch = entry.epoch;
    for (const auto& [v, slot] : entry.versions) {
      if (slot.model) serving.insert(v);
    }
  }
  LOG_INFO("loading model '{}' from {}", name, plan.dir.string());
  // The first version's load time (nv_model_load_duration_secs) includes resolving the config.
  uint64_t started = NowNs();
  auto resolved = ResolveModel(name, plan.dir, *options_.registry, options_.resolve,
                               plan.override_config.get());
  std::function<StatusOr<std::unique_ptr<Scheduler>>(const ModelInfo&, ModelStats*)> make_scheduler;
  if (resolved.ok() && resolved->backend == nullptr) {
    auto prepared = PrepareEnsemble(name, &*resolved);
    if (prepared.ok()) {
      make_scheduler = std::move(prepared).value();
    } else {
      resolved = prepared.status();
    }
  }
  if (!resolved.ok()) {
    LOG_ERROR("failed to load model '{}': {}", name, resolved.status().message());
    MutexLock lock(mu_);
    ModelEntry& entry = models_[name];
    if (serving.empty()) entry.failure = resolved.status().ToString();
    return LoadFailed(name, resolved.status().message());
  }
  std::vector<int64_t> todo;
  {
    MutexLock lock(mu_);
    ModelEntry& entry = models_[name];
    entry.failure.clear();
    for (int64_t v : resolved->versions) {
      if (plan.reusable.count(v) != 0 && serving.count(v) != 0) continue;
      todo.push_back(v);
      VersionSlot& slot = entry.versions[v];
      if (!slot.model) Move(name, v, slot.life, VersionState::kLoading);
    }
  }
  std::map<int64_t, StatusOr<ServedHandle>> loaded;
  for (int64_t v : todo) {
    {
      MutexLock lock(mu_);
      if (models_[name].epoch != epoch) break;  // unloaded meanwhile: CommitLoad cancels
    }
    ModelVersion::Options mo{v, plan.dir, resolved->backend, resolved->config,
                             resolved->config_json};
    mo.latency_observers = &options_.latency_observers;
    mo.response_cache = options_.response_cache;
    mo.max_sequence_backlog_size = options_.max_sequence_backlog_size;
    mo.load_started_ns = started;
    mo.make_scheduler = make_scheduler;
    started = 0;  // later versions count from their own start
    auto version = ModelVersion::Load(mo);
    if (version.ok()) {
      const uint64_t id = next_served_id_.fetch_add(1, std::memory_order_relaxed);
      auto served = MakeServed(std::move(version).value(), plan.temp, &reaper_,
                               [this, name, v, id] { OnReleased(name, v, id); });
      loaded.emplace(v, ServedHandle{std::move(served), id});
    } else {
      LOG_ERROR("failed to load '{}' version {}: {}", name, v, version.status().message());
      loaded.emplace(v, version.status());
    }
  }
  return CommitLoad(name, epoch, *resolved, loaded);
}

Status ModelRepository::CommitLoad(const std::string& name, uint64_t epoch,
                                   const ResolvedModel& resolved,
                                   std::map<int64_t, StatusOr<ServedHandle>>& loaded) {
  std::vector<std::shared_ptr<ModelVersion>> dropping;
  Status first_error;
  {
    MutexLock lock(mu_);
    ModelEntry& entry = models_[name];
    if (entry.epoch != epoch) {
      // Unloaded while loading: the unload wins, the new versions are discarded.
      for (auto& [v, result] : loaded) {
        VersionSlot& slot = entry.versions[v];
        if (slot.life.state() == VersionState::kLoading) {
          Move(name, v, slot.life, VersionState::kUnloaded);
        }
        if (result.ok()) dropping.push_back(std::move(result->model));
      }
      first_error = Unavailable("load of model '" + name + "' was cancelled by an unload");
    } else {
      bool any_ready = false;
      for (int64_t v : resolved.versions) {
        VersionSlot& slot = entry.versions[v];
        auto it = loaded.find(v);
        if (it == loaded.end()) {  // reused as it was
          any_ready = any_ready || slot.model != nullptr;
          continue;
        }
        if (it->second.ok()) {
          if (slot.model) dropping.push_back(std::move(slot.model));
          slot.model = std::move(it->second->model);
          slot.served_id = it->second->id;
          Move(name, v, slot.life, VersionState::kReady);
          any_ready = true;
          LOG_INFO("successfully loaded '{}' version {}", name, v);
        } else {
          if (first_error.ok()) {
            // Triton's words ("version 1 is at UNAVAILABLE state: Internal: ...;"), for the first
            // failed version only.
            first_error = LoadFailed(
                name, "version " + std::to_string(v) +
                          " is at UNAVAILABLE state: " + it->second.status().ToString() + ";");
          }
          if (slot.model) {
            any_ready = true;  // the old version keeps serving
            LOG_WARNING("'{}' version {} keeps serving its previous load", name, v);
          } else {
            Move(name, v, slot.life, VersionState::kFailed, it->second.status().ToString());
          }
        }
      }
      const std::set<int64_t> selected(resolved.versions.begin(), resolved.versions.end());
      for (auto& [v, slot] : entry.versions) {
        if (selected.count(v) != 0) continue;
        if (!slot.model) {
          if (slot.life.state() != VersionState::kUnloading) {
            Move(name, v, slot.life, VersionState::kUnloaded);
          }
          continue;
        }
        if (!any_ready) continue;  // never leave the model with nothing to serve
        LOG_INFO("unloading '{}' version {} (no longer selected by the version policy)", name, v);
        Move(name, v, slot.life, VersionState::kUnloading);
        dropping.push_back(std::move(slot.model));
      }
    }
    PublishLocked();
  }
  // Outside the lock: the last reference hands the version to the reaper.
  LetGo(dropping);
  return first_error;
}

void ModelRepository::UnloadLocked(const std::string& name, ModelEntry& entry,
                                   std::vector<std::shared_ptr<ModelVersion>>* dropping) {
  ++entry.epoch;
  for (auto& [v, slot] : entry.versions) {
    if (slot.model) {
      // OnReleased moves it on to kUnloaded when the last request lets go.
      Move(name, v, slot.life, VersionState::kUnloading);
      dropping->push_back(std::move(slot.model));
    } else if (slot.life.state() == VersionState::kLoading) {
      Move(name, v, slot.life, VersionState::kUnloaded);  // the load in progress is cancelled
    }
  }
}

Status ModelRepository::Unload(const std::string& name, bool unload_dependents) {
  NEREID_RETURN_IF_ERROR(ValidateModelName(name));
  std::vector<std::shared_ptr<ModelVersion>> dropping;
  std::vector<std::string> also;  // implicitly loaded composing models nothing else uses
  {
    MutexLock lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return Status::Ok();
    UnloadLocked(name, it->second, &dropping);
    if (unload_dependents) {
      for (const std::string& c : it->second.composing) {
        auto m = models_.find(c);
        if (m == models_.end() || !m->second.implicit) continue;
        bool used = false;
        for (const auto& [other, entry] : models_) {
          if (other == name) continue;
          bool loaded = false;
          for (const auto& [v, slot] : entry.versions) loaded = loaded || slot.model != nullptr;
          used = used || (loaded && std::find(entry.composing.begin(), entry.composing.end(), c) !=
                                        entry.composing.end());
        }
        if (!used) also.push_back(c);
      }
    }
    PublishLocked();
  }
  LOG_INFO("unloading model '{}' ({} version(s))", name, dropping.size());
  LetGo(dropping);
  for (const std::string& c : also) NEREID_RETURN_IF_ERROR(Unload(c, true));
  return Status::Ok();
}

void ModelRepository::MarkDuplicate(const std::string& name) {
  std::vector<std::shared_ptr<ModelVersion>> dropping;
  {
    MutexLock lock(mu_);
    ModelEntry& entry = models_[name];
    UnloadLocked(name, entry, &dropping);
    entry.failure = "model appears in two or more repositories";
    PublishLocked();
  }
  LetGo(dropping);
}

void ModelRepository::Forget(const std::string& name) {
  std::vector<std::shared_ptr<ModelVersion>> dropping;
  {
    MutexLock lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return;
    UnloadLocked(name, it->second, &dropping);
    it->second.forgotten = true;
    PublishLocked();
  }
  LOG_INFO("model '{}' was removed from the repository", name);
  LetGo(dropping);
}

void ModelRepository::PublishLocked() {
  auto table = std::make_shared<ServingTable>();
  for (const auto& [name, entry] : models_) {
    for (const auto& [v, slot] : entry.versions) {
      if (slot.model) (*table)[name][v] = slot.model;
    }
  }
  serving_.store(std::move(table));
}

void ModelRepository::OnReleased(const std::string& name, int64_t version, uint64_t id) {
  MutexLock lock(mu_);
  auto m = models_.find(name);
  if (m == models_.end()) return;
  auto v = m->second.versions.find(version);
  if (v == m->second.versions.end()) return;
  VersionSlot& slot = v->second;
  // A version replaced by a reload, or one whose slot has moved on (a new load started while it
  // drained), changes nothing.
  if (slot.served_id != id || slot.model || slot.life.state() != VersionState::kUnloading) return;
  Move(name, version, slot.life, VersionState::kUnloaded);
}

StatusOr<std::shared_ptr<ModelVersion>> ModelRepository::Get(const std::string& name,
                                                             int64_t version) const {
  const auto table = serving_.load();
  auto it = table->find(name);
  if (it != table->end() && !it->second.empty()) {
    if (version < 0) return it->second.rbegin()->second;
    auto v = it->second.find(version);
    if (v != it->second.end()) return v->second;
  }
  // Only names that can never be served reach this check, so the request path pays nothing.
  NEREID_RETURN_IF_ERROR(ValidateModelName(name));
  MutexLock lock(mu_);
  auto m = models_.find(name);
  if (m == models_.end() || m->second.forgotten) {
    return NotFound("Request for unknown model: '" + ClientText(name) + "' is not found");
  }
  if (version < 0) {
    return Unavailable("Request for unknown model: '" + name + "' has no available versions");
  }
  if (m->second.versions.count(version) != 0) {
    return Unavailable("Request for unknown model: '" + name + "' version " +
                       std::to_string(version) + " is not at ready state");
  }
  return NotFound("Request for unknown model: '" + name + "' version " + std::to_string(version) +
                  " is not found");
}

StatusOr<bool> ModelRepository::IsReady(const std::string& name, int64_t version) const {
  auto model = Get(name, version);
  if (model.ok()) return !(*model)->UnavailableReason().has_value();
  if (model.status().code() == StatusCode::kUnavailable) return false;
  MutexLock lock(mu_);
  auto m = models_.find(name);
  if (m != models_.end() && !m->second.forgotten) return false;  // known model, unknown version
  return model.status();
}

std::vector<int64_t> ModelRepository::ReadyVersions(const std::string& name) const {
  std::vector<int64_t> out;
  const auto table = serving_.load();
  auto it = table->find(name);
  if (it != table->end()) {
    for (const auto& [v, m] : it->second) out.push_back(v);
  }
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<ModelVersion>>> ModelRepository::ReadyModels()
    const {
  std::vector<std::pair<std::string, std::shared_ptr<ModelVersion>>> out;
  const auto table = serving_.load();
  for (const auto& [name, versions] : *table) {
    for (const auto& [v, model] : versions) out.emplace_back(name, model);
  }
  return out;
}

std::vector<ModelStatus> ModelRepository::Index(bool ready_only) const {
  const auto dirs = ListModelDirs();  // file I/O outside the lock
  MutexLock lock(mu_);
  std::set<std::string> names;
  for (const auto& [name, d] : dirs) names.insert(name);
  for (const auto& [name, entry] : models_) {
    // A model whose directory is gone stays listed only while a version is still winding down.
    bool active = !entry.forgotten;
    for (const auto& [v, slot] : entry.versions) {
      active = active || slot.life.state() != VersionState::kUnloaded;
    }
    if (active) names.insert(name);
  }
  std::vector<ModelStatus> out;
  for (const std::string& name : names) {
    ModelStatus ms{name, {}};
    auto it = models_.find(name);
    if (it != models_.end()) {
      const ModelEntry& entry = it->second;
      auto d = dirs.find(name);
      const bool duplicate = d != dirs.end() && d->second.size() > 1;
      if (duplicate || !entry.failure.empty()) {
        ms.versions.push_back(
            {-1, ModelState::kUnavailable,
             duplicate ? "model appears in two or more repositories" : entry.failure});
      }
      for (const auto& [v, slot] : entry.versions)
        ms.versions.push_back(Report(v, slot.life, slot.model));
    }
    if (ready_only) {
      std::erase_if(ms.versions,
                    [](const VersionStatus& s) { return s.state != ModelState::kReady; });
      if (ms.versions.empty()) continue;
    }
    out.push_back(std::move(ms));
  }
  return out;
}

bool ModelRepository::AllReady() const {
  MutexLock lock(mu_);
  for (const auto& [name, entry] : models_) {
    if (entry.forgotten) continue;
    if (!entry.failure.empty()) return false;
    for (const auto& [v, slot] : entry.versions) {
      const VersionState state = slot.life.state();
      if (state != VersionState::kReady && state != VersionState::kUnloaded &&
          state != VersionState::kUnloading) {
        return false;
      }
    }
  }
  return true;
}

void ModelRepository::UnloadAll() {
  std::vector<std::shared_ptr<ModelVersion>> dropping;
  {
    MutexLock lock(mu_);
    for (auto& [name, entry] : models_) UnloadLocked(name, entry, &dropping);
    PublishLocked();
  }
  LetGo(dropping);  // outside the lock: the reaper destroys what no request holds
}

}  // namespace nereid
