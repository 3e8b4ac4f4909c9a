// The backend plugin interface: the only thing a backend (onnxruntime, identity, ...) compiles
// against. A plugin is a shared library `libnereid_<name>.so` in the backend directory that
// exports the two C entry points at the bottom of this file.
//
// Versioning: the core refuses a plugin whose NereidBackendApiVersion() differs from
// kBackendApiVersion. Bump it on any change to this file or to the headers it includes.
//
// Exceptions: no exception may leave any function of this interface; a plugin catches and
// returns a Status.
//
// The model configuration crosses this boundary as JSON in Triton's rendering (the same text
// `GET /v2/models/{m}/config` returns), as Triton's own backend API does, so plugins need no
// protobuf and the core keeps framework names out of itself.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "nereid/cancel_token.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid::backend {

inline constexpr uint32_t kBackendApiVersion = 9;

enum class LogLevel { kVerbose, kInfo, kWarning, kError };
using LogFunction = std::function<void(LogLevel, std::string_view message)>;

// A borrowed, contiguous, row-major tensor. BYTES tensors hold each element as a 4-byte
// little-endian length followed by that many bytes.
struct TensorRef {
  std::string_view name;
  DataType data_type = DataType::kInvalid;
  std::span<const int64_t> shape;
  std::span<const char> data;
};

// Where a backend writes its outputs. Implemented by the core; not thread-safe (one Execute).
class OutputAllocator {
 public:
  virtual ~OutputAllocator() = default;
  // True when the request wants output `name`; a backend may skip outputs nobody asked for.
  virtual bool IsRequested(std::string_view name) const = 0;
  // Returns `byte_size` writable bytes for output `name` of the given type and shape (shape as
  // the backend produced it, batch dimension first for batching models). At most one call per
  // output per Execute. The memory belongs to the core and outlives Execute.
  virtual StatusOr<std::span<char>> Allocate(std::string_view name, DataType data_type,
                                             std::span<const int64_t> shape, size_t byte_size) = 0;
};

// Where an execution's time went, for the statistics' compute_input / compute_infer /
// compute_output split. Steady-clock nanoseconds since its epoch (ExecuteClockNs). A backend
// sets input_end when its inputs are in the framework's hands and output_start when the framework
// has finished computing; left 0, the core counts all of Execute as compute_infer.
struct ExecuteTimes {
  uint64_t input_end_ns = 0;
  uint64_t output_start_ns = 0;
};

inline uint64_t ExecuteClockNs() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

// Flags of ResponseSender::Send (Triton's TRITONSERVER_RESPONSE_COMPLETE_FINAL).
inline constexpr uint32_t kResponseFinal = 1;

// Release flags of ExecuteArgs::release_flags (API v7; Triton's TRITONSERVER_REQUEST_RELEASE_ALL
// and TRITONSERVER_REQUEST_RELEASE_RESCHEDULE).
inline constexpr uint32_t kReleaseAll = 1;
inline constexpr uint32_t kReleaseReschedule = 2;

// The responses of one request of a decoupled model (model_transaction_policy { decoupled: true }):
// 0..N of them, the last one (possibly with no outputs: "flags-only") carrying kResponseFinal.
// Implemented by the core; owned jointly (shared_ptr) by the core and the plugin, so a plugin may
// keep it and send after Execute returned, from any thread, any number of times (calls are
// serialised by the core). Every request must eventually get exactly one kResponseFinal; a
// request whose sender is destroyed without one is failed by the core (INTERNAL). Anything sent
// after kResponseFinal is refused (INTERNAL) and logged, never delivered.
class ResponseSender {
 public:
  virtual ~ResponseSender() = default;
  // One response with `outputs` (copied before Send returns; requested-or-not filtering is done
  // by the core). `outputs` may be empty only together with kResponseFinal.
  virtual Status Send(std::span<const TensorRef> outputs, uint32_t flags) = 0;
  // One error response; with kResponseFinal it also ends the request.
  virtual Status SendError(const Status& error, uint32_t flags) = 0;
  // True once the client gave up (a cancelled gRPC stream or call, a closed HTTP connection) or
  // the server stops; a plugin should then stop producing and send kResponseFinal.
  virtual bool IsCancelled() const = 0;
};

// One request of an execution, for backends that hand requests to user code one by one (the
// python backend: `execute(requests)`). Views are valid during Execute.
struct RequestInfo {
  std::string_view id;
  // The request's rows of the batch (its leading dimension) for models with max_batch_size > 0;
  // 0 otherwise. The rows of request i follow those of requests 0..i-1 in every input.
  int64_t batch_size = 0;
  uint64_t correlation_id = 0;          // sequence_id when it is an integer, else 0
  std::string_view correlation_id_str;  // sequence_id when it is a string
  uint32_t flags = 0;                   // 1: sequence_start, 2: sequence_end (Triton's flags)
  // The request's other parameters as a JSON object ("{}" when none): strings, integers, bools
  // and doubles.
  std::string parameters_json;
  // API v5: true once the client gave up on the request (a cancelled gRPC call or stream, a
  // closed HTTP connection) or the server stops; empty when the request cannot be cancelled.
  // Callable from any thread during Execute.
  std::function<bool()> is_cancelled;
  // API v9: the request's trace when the server's trace extension sampled it, else empty. Opaque
  // to plugins: its only use is InferCall::parent_trace, to trace a call the request makes as the
  // request's child (Triton's BLS trace=request.trace()). A plugin may keep it past Execute; the
  // trace is written once the request and every holder let go of it.
  std::shared_ptr<const void> trace;
};

// One execution: the inputs of a (possibly batched) request, shapes already reshaped to what the
// model expects. `batch_size` is the leading dimension for models with max_batch_size > 0, else 0.
struct ExecuteArgs {
  std::span<const TensorRef> inputs;
  OutputAllocator* outputs = nullptr;
  int64_t batch_size = 0;
  ExecuteTimes* times = nullptr;  // optional; see ExecuteTimes
  // Decoupled models only, else empty: one sender per request of the execution, in batch order.
  // A backend that neither keeps nor uses its sender may answer through `outputs` as for any
  // model: those outputs become the request's only (FINAL) response.
  std::span<const std::shared_ptr<ResponseSender>> senders;
  // The requests of the execution in batch order (API v4). Filled only for backends whose
  // BackendInfo::wants_request_info is set, else empty.
  std::span<const RequestInfo> requests;
  // API v6: non-decoupled models only, else empty: one Status per request of the execution, in
  // batch order, all OK on entry. A backend sets request_errors[i] to fail request i alone
  // (Triton's error response for one request of a batch) and returns OK for the execution: the
  // other requests get their outputs. A failed request's rows are left out of every output (the
  // outputs hold the rows of the requests that did not fail, in batch order); when every request
  // fails, no output need be written.
  std::span<Status> request_errors{};
  // API v7: one entry per request of the execution, in batch order, kReleaseAll on entry (empty
  // only when a plugin test builds ExecuteArgs itself). A backend sets kReleaseReschedule on
  // request i to have that request executed again in a later execution (Triton's
  // TRITONSERVER_REQUEST_RELEASE_RESCHEDULE): the same request (id, inputs, requested outputs,
  // parameters) comes back with flags 0 (neither sequence start nor end). Its rows are left out of
  // every output, as for request_errors; a decoupled request keeps its response stream open: the
  // sender of this execution refuses later sends and the next execution brings a new sender that
  // continues the request's responses (one that already sent its FINAL is not rescheduled). Only
  // models with `sequence_batching { iterative_sequence: true }` take a request back; on any other
  // model the request ends with INVALID_ARG "Request is released with
  // TRITONSERVER_REQUEST_RELEASE_RESCHEDULE, while the model is not configured to handle such a
  // flag." (Triton's text).
  std::span<uint32_t> release_flags{};
};

// One execution context of a model version. The core never calls Execute concurrently on one
// instance; different instances of a model may run at the same time.
class ModelInstance {
 public:
  virtual ~ModelInstance() = default;
  virtual Status Execute(const ExecuteArgs& args) = 0;
  // The model's own readiness check (API v6; the python backend's `is_ready()`), asked whenever
  // readiness is (model ready endpoints, the repository index, pb_utils.is_model_ready). An error
  // makes the version UNAVAILABLE with its message as the reason. Called from any thread, also
  // while Execute runs; it must not wait for that Execute (answer the last result instead).
  virtual Status CheckReady() { return Status::Ok(); }
};

// How an instance tells the core whether it can serve (API v5): false with a reason while it
// cannot (the python backend's stub process restarting), true once it can again. Every move to
// false counts one restart in the model's metrics; the version is UNAVAILABLE while none of its
// instances is healthy. Callable from any thread until the instance is destroyed.
using ReportHealthFunction = std::function<void(bool healthy, std::string_view reason)>;

struct InstanceOptions {
  std::string name;                    // e.g. "simple_0_1"
  int index = 0;                       // 0-based across the model's instances
  std::string kind;                    // "KIND_CPU" or "KIND_MODEL"
  ReportHealthFunction report_health;  // API v5; may be empty (e.g. in plugin tests)
};

// One loaded version of a model: owns what instances share (e.g. weights, a session template).
// Destroyed only after all of its instances.
class Model {
 public:
  virtual ~Model() = default;
  virtual StatusOr<std::unique_ptr<ModelInstance>> CreateInstance(
      const InstanceOptions& options) = 0;
  // API v6: the unload notice. The core stops serving this version (an unload, a reload that
  // replaces it, the server stopping) and is about to wait for its requests in flight. Called at
  // most once, from any thread, while the instances still exist; must not block. A backend whose
  // requests may be held indefinitely (a decoupled model that never sends FINAL) ends them now,
  // so that the unload or the stop does not wait forever.
  virtual void Unloading() {}
};

struct ModelLoadOptions {
  std::string model_name;
  int64_t version = 0;
  std::string model_dir;    // <repository>/<model>
  std::string model_path;   // <model_dir>/<version>/<default_model_filename>
  std::string config_json;  // the effective (auto-completed, validated) configuration
};

struct AutoCompleteOptions {
  std::string model_name;
  std::string model_path;   // as in ModelLoadOptions, for the version being completed
  std::string config_json;  // what the user wrote (may be nearly empty)
  int default_max_batch_size = 4;
};

struct BackendInfo {
  std::string name;                    // "onnxruntime"
  std::vector<std::string> platforms;  // legacy `platform` values it serves, e.g. onnxruntime_onnx
  std::string default_model_filename;  // e.g. "model.onnx"; empty when the backend needs no file
  bool supports_auto_complete = false;
  // Instances a KIND_CPU group gets when its config leaves `count` at 0 (Triton: 2 for ONNX
  // Runtime, 1 elsewhere).
  int default_cpu_instance_count = 1;
  // True when Execute needs ExecuteArgs::requests (API v4).
  bool wants_request_info = false;
};

// A metric family a backend keeps itself (the python backend's pb_utils.MetricFamily, API v5),
// read at every /metrics scrape and shown after the server's own families.
enum class MetricKind { kCounter, kGauge, kHistogram };

struct MetricSample {
  std::vector<std::pair<std::string, std::string>> labels;  // sorted by name
  double value = 0;                                         // counter, gauge
  // Histogram: upper bounds (ascending, without +Inf), cumulative counts per bound, then the
  // total count and sum.
  std::vector<double> bounds;
  std::vector<uint64_t> cumulative_counts;
  uint64_t count = 0;
  double sum = 0;
};

struct MetricFamilySnapshot {
  std::string name;
  std::string help;
  MetricKind kind = MetricKind::kCounter;
  std::vector<MetricSample> samples;
};

class Backend {
 public:
  virtual ~Backend() = default;
  // The backend's own metric families now (API v5); thread-safe. Most backends have none.
  virtual std::vector<MetricFamilySnapshot> MetricFamilies() const { return {}; }
  virtual BackendInfo Info() const = 0;
  // Returns the configuration with what the model itself tells filled in (inputs, outputs,
  // max_batch_size), as JSON. Called only when auto-complete is on and supported.
  virtual StatusOr<std::string> AutoCompleteConfig(const AutoCompleteOptions& options) = 0;
  // Loads one version. May be called concurrently for different models.
  virtual StatusOr<std::unique_ptr<Model>> LoadModel(const ModelLoadOptions& options) = 0;
};

// An output of an InferCall, owned.
struct InferTensor {
  std::string name;
  DataType data_type = DataType::kInvalid;
  std::vector<int64_t> shape;
  std::string data;  // BYTES length-prefixed
};

// An inference a plugin asks the server to run (Triton's BLS: a Python model calling another
// model). API v4.
struct InferCall {
  std::string model_name;
  int64_t model_version = -1;  // -1: the highest ready version
  std::string id;
  // Without `inputs_owner`, the server copies the inputs' bytes before InferFunction returns.
  std::span<const TensorRef> inputs;
  std::vector<std::string> requested_outputs;  // empty: every output
  // Triton's request timeout in microseconds (0: none), as a client's `timeout` parameter: the
  // called model's queue policy applies it. Added to API v4 without a version bump (in-tree
  // plugins only; ADR 0014).
  uint64_t timeout_us = 0;
  // API v5: Triton's BLS request fields. The sequence id (`correlation_id_str` when not empty,
  // else `correlation_id` when not 0), Triton's request flags (1: sequence start, 2: sequence
  // end) and the request's parameters (strings, integers, bools), as a client's request has them.
  uint64_t correlation_id = 0;
  std::string correlation_id_str;
  uint32_t flags = 0;
  std::vector<std::pair<std::string, std::variant<bool, int64_t, std::string>>> parameters;
  // API v5: a decoupled call (Triton's exec(decoupled=True)): `on_response` gets every response
  // but the last, in order, never concurrently; `done` gets the last one (empty outputs for a
  // flags-only FINAL). Without it, calling a decoupled model fails with Triton's text.
  bool decoupled = false;
  std::function<void(StatusOr<std::vector<InferTensor>>)> on_response;
  // The caller waits for `done` on this thread and holds no instance the server could give the
  // call: the server may then run a non-decoupled call on this thread when an instance of the
  // called model is idle (ADR 0003). Appended to API v5 without a version bump (in-tree plugins
  // only; ADR 0014).
  bool allow_inline = false;
  // API v6: set by the plugin to cancel the call later (Triton's
  // TRITONSERVER_InferenceRequestCancel, the python backend's ResponseIterator.cancel()): Cancel()
  // from any thread makes the called request's response sender report IsCancelled(), and a request
  // still queued is answered CANCELLED "Request was cancelled". Empty: the call cannot be
  // cancelled.
  std::shared_ptr<CancelToken> cancel;
  // API v8: the owner of the bytes `inputs` view (names and shapes are still read before
  // InferFunction returns). When set, the server does not copy the bytes: the called request views
  // them and holds `inputs_owner` until it is released, after `done` (also when `done` came early:
  // a caller that stopped waiting, an error). The bytes must stay unchanged and readable while
  // the owner lives, from any thread; the server drops it from any thread. Empty: copied as
  // before v8.
  std::shared_ptr<const void> inputs_owner;
  // API v9: a RequestInfo::trace of this server (nothing else; empty: none). The called request
  // is then traced as a child of that trace (its records name it as parent_id; Triton's
  // TRITONSERVER_InferenceTraceSpawnChildTrace) instead of being sampled on its own.
  std::shared_ptr<const void> parent_trace;
};

using InferDone = std::function<void(StatusOr<std::vector<InferTensor>>)>;
// Runs `call` through the server (validation, scheduling and statistics of the called model, as
// for a client's request) and calls `done` exactly once, maybe on another thread, maybe before it
// returns. Unavailable (`done` gets UNAVAILABLE) once the server is shutting down.
using InferFunction = std::function<void(const InferCall& call, InferDone done)>;

// API v5: model control for plugins (Triton's pb_utils.is_model_ready / load_model /
// unload_model), with the server's rules: load and unload only in explicit model-control mode
// (Triton's texts otherwise). Each member may be empty (e.g. in plugin tests). Callable from any
// thread; `load` blocks until the model is READY or failed.
struct ModelControl {
  // Is version `version` (-1: any) of `name` ready? An unknown model is not ready.
  std::function<StatusOr<bool>(const std::string& name, int64_t version)> is_ready;
  // Loads (or reloads) `name`; `config_json` (empty: none) overrides its configuration, `files`
  // (relative path, contents) override its files, as the repository extension's load does.
  std::function<Status(const std::string& name, const std::string& config_json,
                       const std::vector<std::pair<std::string, std::string>>& files)>
      load;
  std::function<Status(const std::string& name, bool unload_dependents)> unload;
};

// What the server hands a backend at creation: the `--backend-config=<name>,<k>=<v>` entries for
// it, a sink for log lines and (API v4) a way to run inferences on the server.
struct BackendOptions {
  std::vector<std::pair<std::string, std::string>> config;
  LogFunction log;
  InferFunction infer;         // may be empty (e.g. in plugin tests)
  ModelControl model_control;  // API v5
};

}  // namespace nereid::backend

#define NEREID_BACKEND_EXPORT extern "C" __attribute__((visibility("default")))

// Entry points every plugin defines (exactly these names and signatures):
//   NEREID_BACKEND_EXPORT uint32_t NereidBackendApiVersion();
//   NEREID_BACKEND_EXPORT nereid::backend::Backend* NereidBackendCreate(
//       const nereid::backend::BackendOptions* options, std::string* error);
// NereidBackendCreate returns a heap object the core owns (deleted through the virtual
// destructor), or nullptr with *error set.
using NereidBackendApiVersionFn = uint32_t (*)();
using NereidBackendCreateFn = nereid::backend::Backend* (*)(const nereid::backend::BackendOptions*,
                                                            std::string*);
