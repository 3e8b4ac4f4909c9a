// InferenceServer: the one facade the frontends call. It owns the model repository (and through
// it every loaded model version, its scheduler and instances).
//
// Thread-safety: every method may be called from any thread concurrently.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/cache/response_cache.h"
#include "core/repository/load_error_log.h"
#include "core/repository/load_override.h"
#include "core/request/inference_request.h"
#include "core/server/admission.h"
#include "core/stats/instance_health.h"
#include "core/stats/model_stats.h"
#include "core/tensor/shape.h"
#include "nereid/backend_api.h"
#include "nereid/status.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

class BackendRegistry;
class PluginInferGate;
class ModelRepository;
class SharedMemoryManager;
class RepositoryPoller;
class TaskPool;

// --model-control-mode (seed 002).
enum class ModelControlMode { kNone, kExplicit, kPoll };

// The default bound of a sequence batcher's queue (docs/adr/0010-sequence-backlog-bound.md).
inline constexpr size_t kDefaultMaxSequenceBacklogSize = 4096;

struct ServerOptions {
  std::vector<std::string> model_repositories;
  std::string server_id = "triton";
  std::string backend_directory;  // where libnereid_<backend>.so plugins live
  // --backend-config=<backend>,<key>=<value>, in command-line order.
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> backend_config;
  std::string model_config_name;  // --model-config-name: <model>/configs/<name>.pbtxt
  bool strict_readiness = true;
  bool exit_on_error = true;
  bool disable_auto_complete = false;
  int model_load_thread_count = 4;
  int exit_timeout_secs = 30;
  ModelControlMode model_control_mode = ModelControlMode::kNone;
  std::vector<std::string> startup_models;  // --load-model (explicit mode); "*" alone: all
  int repository_poll_secs = 15;            // poll mode; 0: no polling thread
  // --max-sequence-backlog-size: requests each sequence batcher may hold queued (0: unbounded).
  size_t max_sequence_backlog_size = kDefaultMaxSequenceBacklogSize;
  // --allow-client-shm: whether clients may register and unregister shared memory regions.
  bool allow_client_shm = false;
  // After each load through the model control API and each poll that loaded something (POLL
  // mode), drop the resident pages of the read-only segments of every mapped library
  // (core/stats/library_pages.h): the code a load ran once (ONNX Runtime's kernel registration,
  // ~16 MiB) leaves the resident set. Off by default (unit tests); src/app turns it on and does
  // the same once after start-up.
  bool release_library_pages_after_load = false;
  // Per-request latency observers (metrics summaries); empty when none is wanted.
  LatencyObserverFactory latency_observers;
  // The response cache (--cache-config); nullptr: none.
  std::shared_ptr<ResponseCache> response_cache;
  // The trace extension's global setting (--trace-config); OFF by default.
  trace::TraceConfig trace;
};

// One row of the repository index (POST /v2/repository/index, RepositoryIndex).
struct RepositoryIndexEntry {
  std::string name;
  int64_t version = -1;  // -1: none (never loaded, or a model-level state)
  std::string state;     // READY, UNAVAILABLE, LOADING, UNLOADING; empty when never loaded
  std::string reason;
};

struct TensorMetadata {
  std::string name;
  std::string datatype;  // KServe name, e.g. "FP32"
  Shape shape;           // with a leading -1 when the model batches
};

struct ModelMetadata {
  std::string name;
  std::vector<std::string> versions;
  std::string platform;
  std::vector<TensorMetadata> inputs;
  std::vector<TensorMetadata> outputs;
};

// One ready model version's cumulative statistics (seed 004) and what the metrics need to label
// them.
struct ModelVersionStatistics {
  std::string name;
  int64_t version = 0;
  ModelStatsSnapshot stats;
  std::vector<std::pair<std::string, std::string>> metric_tags;  // config metric_tags, by key
  InstanceHealth::Counts health;  // instances == 0: a model the core serves (an ensemble)
};

struct InferOptions {
  // The caller's thread may run the model itself when an instance is idle and nothing waits
  // (InferAsync then returns only after `done` ran). Frontends allow it only on threads they can
  // spare for the length of an execution.
  bool allow_inline = false;
  // The frontend asked the trace extension itself (InferenceRequest::trace holds the answer,
  // null when not sampled), as Triton's frontends do: InferAsync must not sample it again.
  bool trace_sampled = false;
};

struct ServerMetadata {
  std::string name;
  std::string version;
  std::vector<std::string> extensions;
};

class ModelVersion;

// One ready model version, held by a frontend from decoding a request until the request is
// scheduled: what the decoding reads (the configuration, e.g. to deduce a raw binary request's
// input) and what runs the request are then the same version, even when a reload swaps the
// serving table in between. Holding it keeps that version loaded, as a request in flight does.
class ServedModel {
 public:
  const inference::ModelConfig& config() const;
  int64_t version() const;

 private:
  friend class InferenceServer;
  explicit ServedModel(std::shared_ptr<ModelVersion> model) : model_(std::move(model)) {}
  std::shared_ptr<ModelVersion> model_;
};

class InferenceServer {
 public:
  // Loads the backends and every model of the repositories. With exit_on_error, any model load
  // failure fails creation; otherwise failed models stay UNAVAILABLE and the rest serve.
  static StatusOr<std::unique_ptr<InferenceServer>> Create(const ServerOptions& options);
  ~InferenceServer();

  InferenceServer(const InferenceServer&) = delete;
  InferenceServer& operator=(const InferenceServer&) = delete;

  bool IsLive() const;
  bool IsReady() const;
  const ServerMetadata& Metadata() const { return metadata_; }

  // version -1 (or empty in the protocol) means "any/the latest ready version".
  StatusOr<bool> ModelIsReady(const std::string& name, int64_t version) const;
  StatusOr<ModelMetadata> GetModelMetadata(const std::string& name, int64_t version) const;
  StatusOr<std::shared_ptr<const inference::ModelConfig>> GetModelConfig(const std::string& name,
                                                                         int64_t version) const;
  // The configuration rendered as Triton's JSON (REFERENCE.md §2.4); computed once at load.
  StatusOr<std::shared_ptr<const std::string>> GetModelConfigJson(const std::string& name,
                                                                  int64_t version) const;

  // The statistics extension, as Triton's TRITONSERVER_ServerModelStatistics: an empty `name` gives
  // every ready version of every model (by name, then version); a name alone gives its ready
  // versions; a name and a version (>= 0) that one version. A model with no ready version or a
  // version that is not ready is INVALID_ARG with Triton's text.
  StatusOr<std::vector<ModelVersionStatistics>> GetModelStatistics(const std::string& name,
                                                                   int64_t version) const;

  // The version a request for (name, version) would run on now: one lookup of the serving table.
  // Errors are the inference path's (NOT_FOUND / UNAVAILABLE with Triton's text).
  StatusOr<ServedModel> AcquireModel(const std::string& name, int64_t version) const;

  // Validates the request against the model and schedules it. `done` is called exactly once,
  // possibly before InferAsync returns (validation errors).
  void InferAsync(std::unique_ptr<InferenceRequest>&& request, InferCallback done,
                  const InferOptions& options = {});
  // Same, on `model` (from AcquireModel) rather than on whatever the table serves now.
  void InferAsync(ServedModel model, std::unique_ptr<InferenceRequest>&& request,
                  InferCallback done, const InferOptions& options = {});

  // Model repository extension. In NONE and POLL mode load and unload fail with UNAVAILABLE
  // "explicit model load / unload is not allowed if polling is enabled" (Triton's text).
  std::vector<RepositoryIndexEntry> RepositoryIndex(bool ready_only) const;
  // Loads or reloads on a load thread and calls `done` there once every selected version is READY
  // or failed. `done` may run before LoadModelAsync returns (immediate errors).
  void LoadModelAsync(const std::string& name, ModelLoadParameters&& params,
                      std::function<void(Status)> done);
  // Starts the unload and returns; requests in flight finish on the version they hold.
  // With unload_dependents, the composing models an ensemble load brought in implicitly and that no
  // other loaded ensemble uses are unloaded too.
  Status UnloadModel(const std::string& name, bool unload_dependents);
  // POLL mode: scan the repositories now (SIGHUP). Other modes: no-op, returns false.
  bool PollRepositoryNow();
  ModelControlMode control_mode() const { return options_.model_control_mode; }
  // The response cache (--cache-config), nullptr when there is none.
  const ResponseCache* response_cache() const { return options_.response_cache.get(); }
  // The backend plugins' own metric families (python's pb_utils.MetricFamily), for /metrics.
  std::vector<backend::MetricFamilySnapshot> BackendMetricFamilies() const;

  // Graceful stop: refuse new inferences (UNAVAILABLE), wait until `deadline` for those in
  // flight, then unload every model. The caller computes the deadline once (now +
  // exit_timeout_secs) for the whole shutdown, so the frontends that stop after this share it.
  // Past the deadline, every request still queued is answered UNAVAILABLE instead of run, and
  // executions already running get up to `grace` more to finish (a backend cannot be
  // interrupted). Returns false when some are still running then: the models are not unloaded,
  // and the caller must not destroy this server (their code still runs); it exits the process.
  // The unload notice of a stop (backend API v6 Model::Unloading) to every loaded model, so that
  // requests a backend could hold forever end now. Call it before anything waits for requests in
  // flight (the gRPC frontend's shutdown waits for its streams); Stop() sends it too. Never
  // blocks.
  void NoticeStop();
  bool Stop(std::chrono::steady_clock::time_point deadline,
            std::chrono::milliseconds grace = std::chrono::seconds(5));

  int64_t InflightCount() const { return admission_->inflight(); }

  // How long ago this server was created (steady clock).
  std::chrono::steady_clock::duration Uptime() const {
    return std::chrono::steady_clock::now() - started_;
  }
  // The last model load failures, oldest first (bounded; LoadErrorLog).
  std::vector<LoadError> RecentLoadErrors() const;

  // The shared memory extension's regions (system and CUDA API); never null.
  SharedMemoryManager& shared_memory() const { return *shared_memory_; }
  // The trace extension's settings (GET/POST .../trace/setting, gRPC TraceSetting); never null.
  trace::TraceManager& tracer() const { return *trace_; }

 private:
  InferenceServer(const ServerOptions& options, std::unique_ptr<ModelRepository> repository);
  std::vector<Status> LoadAtStart();

  ServerOptions options_;
  ServerMetadata metadata_;
  const std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::unique_ptr<BackendRegistry> registry_;
  // Plugins' way into InferAsync (BLS); detached first at destruction.
  std::shared_ptr<PluginInferGate> plugin_infer_;
  std::unique_ptr<ModelRepository> repository_;  // declared after registry_: destroyed first
  std::unique_ptr<RepositoryPoller> poller_;     // POLL mode only
  std::unique_ptr<TaskPool> load_pool_;          // runs LoadModelAsync
  // Regions may be pinned by requests still in flight; their slices outlive it safely.
  std::unique_ptr<SharedMemoryManager> shared_memory_;
  std::shared_ptr<trace::TraceManager> trace_;  // set by Create
  // Inferences taken and not finished, and whether new ones are taken (one atomic step). Shared
  // with every request in flight, so one that completes after this server is gone is harmless.
  std::shared_ptr<Admission> admission_ = Admission::Create();
  // Cancelled when shutdown passes its deadline: queued requests are answered, not run.
  std::shared_ptr<CancelToken> stop_token_ = std::make_shared<CancelToken>();
};

}  // namespace nereid
