// ModelRepository: the models of one or more repository folders, their per-version state
// (READY / UNAVAILABLE / LOADING / UNLOADING with a reason) and the table requests read.
//
// Thread-safety: all methods are safe from any thread. Lookups on the request path (Get) take no
// lock: they load an immutable serving table through an atomic shared_ptr. Writers serialize on
// mu_ and publish a new table.
#pragma once

#include <atomic>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/model/backend_registry.h"
#include "core/model/model_version.h"
#include "core/repository/config_resolver.h"

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
  std::vector<VersionStatus> versions;
};

class ModelRepository {
 public:
  struct Options {
    std::vector<std::filesystem::path> roots;
    const BackendRegistry* registry = nullptr;  // outlives the repository
    ResolveOptions resolve;
    int load_thread_count = 4;
    LatencyObserverFactory latency_observers;  // optional, given to every loaded version
  };

  static StatusOr<std::unique_ptr<ModelRepository>> Create(const Options& options);
  ~ModelRepository();

  // Loads every model found in the roots, in parallel. Returns one error per model that failed.
  std::vector<Status> LoadAll();

  // The version to serve: `version` -1 means the highest ready one.
  StatusOr<std::shared_ptr<ModelVersion>> Get(const std::string& name, int64_t version) const;
  // Whether that version is ready; an error only when the model is unknown.
  StatusOr<bool> IsReady(const std::string& name, int64_t version) const;
  std::vector<int64_t> ReadyVersions(const std::string& name) const;
  // Every ready version of every model, by name then version (lock-free snapshot).
  std::vector<std::pair<std::string, std::shared_ptr<ModelVersion>>> ReadyModels() const;
  std::vector<ModelStatus> Index() const;
  // Every known version READY (a version unloaded on purpose is tolerated).
  bool AllReady() const;
  // Drops every model; requests in flight keep theirs until they finish.
  void UnloadAll();

 private:
  struct VersionSlot {
    VersionStatus status;
    std::shared_ptr<ModelVersion> model;
  };
  struct ModelEntry {
    std::filesystem::path dir;
    std::map<int64_t, VersionSlot> versions;
    std::string failure;  // model-level failure reason (config, backend, duplicates)
  };
  using ServingTable = std::map<std::string, std::map<int64_t, std::shared_ptr<ModelVersion>>>;

  explicit ModelRepository(const Options& options) : options_(options) {}
  std::map<std::string, std::filesystem::path> Scan(std::vector<Status>* errors);
  Status LoadModel(const std::string& name, const std::filesystem::path& dir);
  void PublishLocked();

  Options options_;
  mutable std::mutex mu_;
  std::map<std::string, ModelEntry> models_;  // guarded by mu_
  std::atomic<std::shared_ptr<const ServingTable>> serving_;
};

}  // namespace nereid
