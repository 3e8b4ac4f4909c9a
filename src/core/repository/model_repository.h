// ModelRepository: the models of one or more repository folders, their per-version state
// (READY / UNAVAILABLE / LOADING / UNLOADING with a reason), the table requests read, and the
// lifecycle operations of Triton's model control modes: load everything, load / reload one model
// (optionally with a `config` override and `file:` contents), unload, and the partial reloads
// POLL mode asks for.
//
// Reload semantics (REFERENCE.md §5.2, §5.3): a version being reloaded keeps serving until its
// replacement is READY, and is swapped out in one publication of the serving table; a version
// that fails to reload keeps the old one serving; versions the version policy no longer selects
// are unloaded only once at least one selected version is READY (so a failed switch to a new
// `latest` never leaves the model without a serving version). An unloaded version leaves the
// serving table at once and is destroyed when the last request using it finishes (UNLOADING
// until then, then UNAVAILABLE "unloaded": the move happens under mu_ on the thread that drops
// the last reference, so readers only read states).
//
// Thread-safety: all methods are safe from any thread. Lookups on the request path (Get) take no
// lock: they load an immutable serving table through an atomic shared_ptr. Loads of one model
// serialize on that model's load mutex; loads of different models run in parallel; state
// changes serialize on mu_ (a leaf lock: no backend call, file I/O or model destruction happens
// under it, and no version's last reference is dropped under it). Served versions are destroyed
// on the reaper thread only; the destructor waits until every version still held by a request
// has been released and destroyed there.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "common/thread_annotations.h"
#include "core/cache/response_cache.h"
#include "core/model/backend_registry.h"
#include "core/model/model_version.h"
#include "core/repository/config_resolver.h"
#include "core/repository/load_error_log.h"
#include "core/repository/load_override.h"
#include "core/repository/served_version.h"
#include "core/repository/version_state.h"

namespace nereid {

enum class ModelState { kUnknown, kReady, kUnavailable, kLoading, kUnloading };
const char* ModelStateName(ModelState state);

struct VersionStatus {
  int64_t version = -1;  // -1: the failure is about the model, not one version
  ModelState state = ModelState::kUnknown;
  std::string reason;
};

struct ModelStatus {
  std::string name;
  std::vector<VersionStatus> versions;  // empty: a model directory never loaded
};

class ModelRepository {
 public:
  struct Options {
    std::vector<std::filesystem::path> roots;
    const BackendRegistry* registry = nullptr;  // outlives the repository
    ResolveOptions resolve;
    int load_thread_count = 4;
    size_t max_sequence_backlog_size = 0;           // given to every loaded version; 0: unbounded
    LatencyObserverFactory latency_observers;       // optional, given to every loaded version
    std::shared_ptr<ResponseCache> response_cache;  // optional, given to every loaded version
  };

  static StatusOr<std::unique_ptr<ModelRepository>> Create(const Options& options);
  ~ModelRepository();

  // Loads every model found in the roots, in parallel. Returns one error per model that failed.
  std::vector<Status> LoadAll() EXCLUDES(mu_);
  // Loads the named models in parallel (EXPLICIT start-up). One error per failure.
  std::vector<Status> LoadNamed(const std::vector<std::string>& names) EXCLUDES(mu_);

  // Loads or reloads `name` from its repository directory, or from `params` overrides; blocks
  // until every selected version is READY or failed. Triton's errors: an unknown model is
  // INTERNAL "failed to load '<m>', failed to poll from model repository"; a load failure is
  // INVALID_ARG "load failed for model '<m>': ...".
  Status Load(const std::string& name, const ModelLoadParameters& params) EXCLUDES(mu_);
  // Starts unloading every version of `name` and returns without waiting for requests in flight.
  // Unloading a model that is not loaded (or unknown) succeeds. With unload_dependents, the
  // composing models an ensemble's load brought in implicitly and that no other loaded ensemble
  // uses are unloaded too.
  Status Unload(const std::string& name, bool unload_dependents = false) EXCLUDES(mu_);

  // POLL mode: reloads `name` from `dir`, keeping loaded versions listed in `reusable` as they
  // are (their files did not change). Errors as Load.
  Status ReloadFromDirectory(const std::string& name, const std::filesystem::path& dir,
                             const std::set<int64_t>& reusable) EXCLUDES(mu_);
  // The last load failures of Load, ReloadFromDirectory and LoadAll (bounded; oldest first).
  std::vector<LoadError> RecentLoadErrors() const { return load_errors_.Recent(); }
  // POLL mode: the model's directory appears in more than one root: unload it and mark it so.
  void MarkDuplicate(const std::string& name) EXCLUDES(mu_);
  // POLL mode: the model's directory is gone: unload it and drop it from the index once unloaded.
  void Forget(const std::string& name) EXCLUDES(mu_);

  // Every model directory of every root (name -> its directories; more than one is a duplicate).
  std::map<std::string, std::vector<std::filesystem::path>> ListModelDirs() const;

  // The version to serve: `version` -1 means the highest ready one. An invalid model name
  // (ValidateModelName) is InvalidArgument rather than "unknown model".
  StatusOr<std::shared_ptr<ModelVersion>> Get(const std::string& name, int64_t version) const
      EXCLUDES(mu_);
  // Whether that version is ready; an error only when the model is unknown.
  StatusOr<bool> IsReady(const std::string& name, int64_t version) const EXCLUDES(mu_);
  std::vector<int64_t> ReadyVersions(const std::string& name) const;
  // Triton's repository index: every model directory of the roots plus every model with a state,
  // sorted by name; with ready_only, only READY versions.
  std::vector<ModelStatus> Index(bool ready_only = false) const EXCLUDES(mu_);
  // Every ready version of every model, by name then version (lock-free snapshot).
  std::vector<std::pair<std::string, std::shared_ptr<ModelVersion>>> ReadyModels() const;
  // Every known version READY (a version unloaded on purpose is tolerated).
  bool AllReady() const EXCLUDES(mu_);
  // Drops every model; requests in flight keep theirs until they finish.
  void UnloadAll() EXCLUDES(mu_);

 private:
  struct VersionSlot {
    VersionLifecycle life;                // every move through Move, under mu_
    std::shared_ptr<ModelVersion> model;  // set while kReady
    uint64_t served_id = 0;  // the last model held: its release ends kUnloading (OnReleased)
  };
  struct ModelEntry {
    std::map<int64_t, VersionSlot> versions;
    std::string failure;  // model-level failure reason (config, backend, duplicates)
    uint64_t epoch = 0;   // bumped by every unload: a load that started before is cancelled
    bool forgotten = false;
    bool implicit = false;               // loaded only because an ensemble needed it
    std::vector<std::string> composing;  // an ensemble's step models (ensemble_loading.cc)
  };
  struct LoadPlan {
    std::filesystem::path dir;
    std::shared_ptr<TempModelDir> temp;
    std::shared_ptr<const inference::ModelConfig> override_config;
    std::set<int64_t> reusable;
  };
  struct ServedHandle {
    std::shared_ptr<ModelVersion> model;  // from MakeServed
    uint64_t id = 0;                      // what OnReleased is told when it is released
  };
  using ServingTable = std::map<std::string, std::map<int64_t, std::shared_ptr<ModelVersion>>>;

  explicit ModelRepository(const Options& options);
  // Load without recording a failure in load_errors_.
  Status LoadUnrecorded(const std::string& name, const ModelLoadParameters& params) EXCLUDES(mu_);
  // Records a failed `status` of loading `name` in load_errors_; returns it.
  Status Recorded(const std::string& name, Status status);
  Status LoadWithPlan(const std::string& name, const LoadPlan& plan) EXCLUDES(mu_);
  // LoadWithPlan, then (when it succeeded) RevalidateDependents.
  Status LoadAndRevalidate(const std::string& name, const LoadPlan& plan) EXCLUDES(mu_);
  // `name` was (re)loaded: every serving ensemble that uses it is loaded again, which checks it
  // against the new configuration; one that no longer fits is unloaded with the error as its
  // reason (REFERENCE-2 §7.4). Ensembles this thread is loading are skipped (ensemble_loading.cc).
  void RevalidateDependents(const std::string& name) EXCLUDES(mu_);
  Status CommitLoad(const std::string& name, uint64_t epoch, const ResolvedModel& resolved,
                    std::map<int64_t, StatusOr<ServedHandle>>& loaded) EXCLUDES(mu_);
  // A served model (`id`) lost its last reference: UNLOADING -> UNLOADED if the slot still waits
  // for that very model. Runs on the releasing thread, never under mu_.
  void OnReleased(const std::string& name, int64_t version, uint64_t id) EXCLUDES(mu_);
  std::shared_ptr<Mutex> LoadMutex(const std::string& name) EXCLUDES(mu_);
  // `entry` is one of models_.
  void UnloadLocked(const std::string& name, ModelEntry& entry,
                    std::vector<std::shared_ptr<ModelVersion>>* dropping) REQUIRES(mu_);
  std::vector<Status> LoadParallel(const std::vector<std::string>& names) EXCLUDES(mu_);
  void PublishLocked() REQUIRES(mu_);
  // An ensemble (resolved->backend == nullptr): loads the composing models it needs that have no
  // state yet, checks them against the ensemble, marks it decoupled when a step is, and returns
  // the scheduler factory of its versions (ensemble_loading.cc). Triton's errors: unknown models,
  // failed composing models, circular dependencies, mapping and type conflicts.
  StatusOr<std::function<StatusOr<std::unique_ptr<Scheduler>>(const ModelInfo&, ModelStats*)>>
  PrepareEnsemble(const std::string& name, ResolvedModel* resolved) EXCLUDES(mu_);
  // Why step model `model` (version, -1 for any) cannot serve ensemble `ensemble`.
  Status ComposingError(const std::string& ensemble, const std::string& model, int64_t version)
      EXCLUDES(mu_);
  // Whether `dir` holds an ensemble's configuration (LoadAll loads those after the others).
  bool IsEnsembleDir(const std::filesystem::path& dir) const;

  // Declared first, so destroyed last: it outlives the serving table and every version.
  Reaper reaper_;
  Options options_;
  std::atomic<uint64_t> next_served_id_{1};
  mutable Mutex mu_;
  std::map<std::string, ModelEntry> models_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Mutex>> load_mutexes_ GUARDED_BY(mu_);
  std::atomic<std::shared_ptr<const ServingTable>> serving_;
  LoadErrorLog load_errors_;
};

}  // namespace nereid
