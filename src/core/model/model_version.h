// ModelVersion: one loaded version of a model: its effective configuration, the backend's model
// object, its instances and its scheduler. Shared (std::shared_ptr) between the repository and
// every request in flight, so an unload never pulls a model from under a request. Destroying it
// joins its executors, so it must never be destroyed on one of them: the repository wraps every
// loaded version so that its last owner hands it to the reaper thread (served_version.h).
//
// Thread-safety: immutable after Load except for the scheduler, which is thread-safe.
#pragma once

#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/cache/response_cache.h"
#include "core/model/backend_registry.h"
#include "core/model/classification.h"
#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/scheduler/scheduler.h"
#include "core/stats/instance_health.h"
#include "core/stats/model_stats.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

class ModelVersion {
 public:
  struct Options {
    int64_t version = 0;
    std::filesystem::path model_dir;
    const BackendRegistry::Entry* backend = nullptr;            // outlives the model version
    std::shared_ptr<const inference::ModelConfig> config;       // effective, validated
    std::shared_ptr<const std::string> config_json;             // its Triton JSON rendering
    const LatencyObserverFactory* latency_observers = nullptr;  // optional; outlives the call
    size_t max_sequence_backlog_size = 0;  // sequence batcher queue bound; 0: unbounded
    uint64_t load_started_ns = 0;  // NowNs() when loading the model began; 0: when Load begins
    // Set for a model the core serves itself (an ensemble): no backend, no instances; this makes
    // its scheduler from the version's info and stats (which outlive the scheduler).
    std::function<StatusOr<std::unique_ptr<Scheduler>>(const ModelInfo&, ModelStats*)>
        make_scheduler = nullptr;
    // The server's response cache (--cache-config), used when the configuration enables
    // response_cache; nullptr: none.
    std::shared_ptr<ResponseCache> response_cache;
  };

  // Loads the backend model and the outputs' label files, creates every instance of every
  // instance group and runs the configuration's warmup samples on each of them. Records the load
  // time and the resident memory the load added (an estimate: loads running in parallel on other
  // threads count too) in stats().
  static StatusOr<std::shared_ptr<ModelVersion>> Load(const Options& options);
  ~ModelVersion();

  const ModelInfo& info() const { return info_; }
  int64_t version() const { return info_.version; }
  const std::shared_ptr<const inference::ModelConfig>& config() const { return config_; }
  const std::shared_ptr<const std::string>& config_json() const { return config_json_; }
  // Cumulative statistics of this version; lives as long as the version.
  ModelStats& stats() const { return *stats_; }
  // What the backend reports of its instances' health (readiness, restart metrics).
  const InstanceHealth& health() const { return *health_; }
  // Why the version cannot serve although it is loaded: no instance is healthy (the health's
  // reason), or an instance's own readiness check failed (backend API v6
  // ModelInstance::CheckReady: that error's message). nullopt when it can serve.
  std::optional<std::string> UnavailableReason() const;

  // The unload notice (backend API v6): tells the backend this version is no longer served, so
  // requests it may hold forever end now. Called before the repository lets the version go.
  // Called more than once (a server stop, then its unload), it tells the backend once.
  void Unloading() const {
    if (backend_model_ != nullptr && !unloading_.exchange(true)) backend_model_->Unloading();
  }

  // Validates and schedules. `done` runs exactly once. `self` keeps the version alive until the
  // request completes. With allow_inline the request may run on the calling thread.
  static void Infer(const std::shared_ptr<ModelVersion>& self,
                    std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                    bool allow_inline);
  // Infer for a caller whose `done` itself keeps the version alive until it has run and calls
  // FinishResult first (the server's one completion object per request, inference_server.cc):
  // no closure of the version's own around it, so a request costs no allocation here.
  void InferHeld(std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                 bool allow_inline);
  // The version's last step on a result: classification, when `classify`
  // (WantsClassification of the request, read before it was handed to InferHeld).
  void FinishResult(bool classify, StatusOr<std::unique_ptr<InferenceResponse>>* result) const;

 private:
  ModelVersion() = default;

  ModelInfo info_;
  std::shared_ptr<const inference::ModelConfig> config_;
  std::shared_ptr<const std::string> config_json_;
  OutputLabels labels_;  // label_filename contents, for classification
  std::unique_ptr<backend::Model> backend_model_;
  std::unique_ptr<ModelStats> stats_;  // outlives scheduler_, which records into it
  // Shared with the instances' report_health hooks (a backend thread may report while the
  // version is being destroyed).
  std::shared_ptr<InstanceHealth> health_ = std::make_shared<InstanceHealth>();
  std::unique_ptr<Scheduler> scheduler_;  // destroyed before backend_model_ and stats_
  // The instances scheduler_ owns, for CheckReady (valid as long as scheduler_).
  std::vector<backend::ModelInstance*> instances_;
  mutable std::atomic<bool> unloading_{false};  // Unloading() told the backend
};

}  // namespace nereid
