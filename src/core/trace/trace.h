// Request tracing in Triton's "triton" mode (REFERENCE-2.md §12.2): TraceManager holds the global
// and per-model settings, samples requests (one in `rate`, at most `count`) and collects each
// finished trace's JSON records; a TraceWriter thread writes them to `<file>` (at shutdown or in
// 1 MiB pieces when log_frequency is 0) or to `<file>.<n>` every `log_frequency` traces.
//
// A request carries a nullable std::shared_ptr<Trace> (InferenceRequest::trace); when tracing is
// OFF everywhere the request path pays one relaxed atomic load (TraceManager::MaybeEnabled).
//
// Thread-safety: TraceManager and Trace are safe to use from any thread. Lock order: a Trace's
// mutex is never held while taking its setting's mutex, and the writer's mutex is last.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "common/thread_annotations.h"
#include "core/trace/trace_settings.h"
#include "core/trace/trace_writer.h"
#include "nereid/data_type.h"

namespace nereid::trace {

class TraceSetting;

// One sampled request (or one ensemble step of it: a child shares its root's record buffer and
// names the root's id as parent_id). Records are written when the root trace is destroyed, i.e.
// when the request and its steps have all let go of it.
class Trace : public std::enable_shared_from_this<Trace> {
 public:
  ~Trace();
  Trace(const Trace&) = delete;
  Trace& operator=(const Trace&) = delete;

  uint64_t id() const { return id_; }
  uint64_t parent_id() const { return parent_id_; }
  bool timestamps() const { return (level_ & kLevelTimestamps) != 0; }
  bool tensors() const { return (level_ & kLevelTensors) != 0; }

  // REQUEST_START, at TIMESTAMPS level only: the header record (id, model_name, model_version,
  // request_id if not empty, parent_id for a child) followed by the timestamp.
  void Start(std::string_view model_name, int64_t model_version, std::string_view request_id,
             uint64_t ns);
  // `{"id":N,"timestamps":[{"name":"<name>","ns":<ns>}]}` at TIMESTAMPS level.
  void Capture(std::string_view name, uint64_t ns);
  // `{"id":N,"activity":"<activity>","tensor":{"name","data","shape","dtype"}}` at TENSORS level;
  // `data` as Triton prints it (BYTES elements quoted, FP16/BF16 left empty).
  void Tensor(std::string_view activity, std::string_view name, DataType type,
              std::span<const int64_t> shape, std::span<const char> data);
  // A trace for one step of an ensemble: new id, parent_id = this trace's id.
  std::shared_ptr<Trace> SpawnChild();

 private:
  friend class TraceSetting;
  Trace(std::shared_ptr<TraceSetting> setting, std::shared_ptr<Trace> root, uint64_t id,
        uint64_t parent_id, uint32_t level);
  void Append(const std::string& record) EXCLUDES(mu_);

  const std::shared_ptr<TraceSetting> setting_;
  const std::shared_ptr<Trace> root_;  // null for a root
  const uint64_t id_;
  const uint64_t parent_id_;
  const uint32_t level_;
  Mutex mu_;  // root only: records of the root and its children
  std::string records_ GUARDED_BY(mu_);
};

class TraceManager {
 public:
  // Fails when the trace file cannot be created (checked at start, as a clear error) or the mode
  // is not "triton" (OpenTelemetry is not supported by this build).
  static StatusOr<std::shared_ptr<TraceManager>> Create(const TraceConfig& global);
  ~TraceManager();  // Shutdown()

  // Triton's UpdateTraceSetting: model "" is the global setting; a model setting falls back on the
  // global one for every key it does not set; clearing every key drops it. Fails without change
  // with "Attempting to set invalid trace setting :<reason>" unless the result is OFF or valid.
  Status Update(const std::string& model, const TraceSettingsUpdate& update) EXCLUDES(mu_);
  TraceConfig Get(const std::string& model) const EXCLUDES(mu_);

  // False only when every setting is OFF (then Sample would return null): one relaxed load.
  bool MaybeEnabled() const { return enabled_.load(std::memory_order_relaxed); }
  // The trace for a new request of `model`, or null when not sampled.
  std::shared_ptr<Trace> Sample(const std::string& model) EXCLUDES(mu_);

  // Writes every collected trace (partial batches included) and closes the files. Idempotent.
  void Shutdown() EXCLUDES(mu_);
  // Waits until every trace collected so far is on disk (tests, GET after a run).
  void Flush() EXCLUDES(mu_);

 private:
  struct Entry;
  explicit TraceManager(const TraceConfig& global);
  Status UpdateLocked(const std::string& model, const TraceSettingsUpdate& update) REQUIRES(mu_);
  void RefreshEnabled() REQUIRES(mu_);

  const std::shared_ptr<TraceWriter> writer_;
  const TraceConfig defaults_;  // the command line's setting: what clearing a global key gives
  mutable Mutex mu_;
  std::shared_ptr<Entry> global_ GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<Entry>> models_ GUARDED_BY(mu_);
  bool stopped_ GUARDED_BY(mu_) = false;
  std::atomic<bool> enabled_{false};
};

}  // namespace nereid::trace
