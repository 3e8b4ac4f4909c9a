// The Python backend plugin (backend: "python"): each instance runs the model's model.py in a
// stub process of its own (stub_process.h) speaking stub_protocol.h. See docs/python_backend.md.
//
// Thread-safety: PythonBackend and PythonModel are immutable after construction; a
// PythonInstance is used by one Execute at a time (the core's contract) and by its watcher
// thread, which restarts a dead stub and, while the instance is idle, reads what a decoupled
// model's sender threads send for requests of earlier executions: both hold the instance's mutex
// while they use the stub.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <exception>
#include <filesystem>
#include <future>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/config_json.h"
#include "common/config_reader.h"
#include "common/thread_annotations.h"
#include "nereid/backend_api.h"
#include "python/batch_split.h"
#include "python/block_claims.h"
#include "python/custom_metrics.h"
#include "python/exit_waiter.h"
#include "python/metric_message.h"
#include "python/stub_process.h"
#include "python/stub_protocol.h"

namespace nereid::backends::python {
namespace {

constexpr const char* kPython = "/usr/bin/python3";  // Debian's; never one from a model folder

// The folder of libnereid_python.so: its resources live in "<dir>/python".
std::string ResourcesDir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&ResourcesDir), &info) == 0 || info.dli_fname == nullptr) {
    return "";
  }
  return (std::filesystem::path(info.dli_fname).parent_path() / "python").string();
}

struct Settings {
  std::chrono::seconds stub_timeout{30};
  uint64_t shm_default_size = 1 << 20;  // Triton's defaults: 1 MiB, grown by 1 MiB
  uint64_t shm_growth_size = 1 << 20;
  backend::LogFunction log;
  backend::InferFunction infer;   // BLS
  backend::ModelControl control;  // pb_utils.is_model_ready / load_model / unload_model
  // pb_utils.MetricFamily of every model (a family name is global, as in Triton).
  std::shared_ptr<CustomMetrics> metrics = std::make_shared<CustomMetrics>();
};

// Each stub process owns its custom-metric handles (CustomMetrics owner ids).
std::atomic<int64_t> next_metrics_owner{1};

// What the instances of one model share.
struct ModelShared {
  std::string model_name;
  StubCommand command;
  std::string config_json;
  std::string model_dir;
  int64_t version = 0;
  bool decoupled = false;
  std::vector<std::string> outputs;  // configured output names, in config order
  std::shared_ptr<const Settings> settings;
};

void Log(const Settings& settings, backend::LogLevel level, const std::string& message) {
  if (settings.log) {
    settings.log(level, message);
  } else {
    std::cerr << message << std::endl;
  }
}

backend::LogLevel StubLogLevel(int level) {
  switch (level) {
    case 1:
      return backend::LogLevel::kWarning;
    case 2:
      return backend::LogLevel::kError;
    case 3:
      return backend::LogLevel::kVerbose;
    default:
      return backend::LogLevel::kInfo;
  }
}

std::string InitMessage(const ModelShared& m, const backend::InstanceOptions& o) {
  rapidjson::Document doc(rapidjson::kObjectType);
  auto& a = doc.GetAllocator();
  rapidjson::Value args(rapidjson::kObjectType);
  auto put = [&](const char* key, const std::string& value) {
    args.AddMember(rapidjson::Value(key, a), rapidjson::Value(value.c_str(), a), a);
  };
  put("model_config", m.config_json);
  put("model_instance_kind", o.kind.rfind("KIND_", 0) == 0 ? o.kind.substr(5) : o.kind);
  put("model_instance_name", o.name);
  put("model_instance_device_id", "0");
  put("model_repository", m.model_dir);
  put("model_version", std::to_string(m.version));
  put("model_name", m.model_name);
  doc.AddMember("op", "init", a);
  doc.AddMember("args", args, a);
  return WriteJson(doc);
}

Status BlsTimedOut(const std::string& model) {
  return Unavailable("BLS request to model '" + model + "' timed out (stub-timeout-seconds)");
}

Status NoModelControl() { return Unsupported("model control is not available in this server"); }

class PythonInstance final : public backend::ModelInstance {
 public:
  PythonInstance(std::shared_ptr<const ModelShared> model, backend::InstanceOptions options)
      : model_(std::move(model)), options_(std::move(options)) {}

  ~PythonInstance() override {
    stopping_ = true;
    if (const pid_t starting = starting_pid_.load(); starting > 0) {
      kill(starting, SIGKILL);  // a restart blocked in initialize() must not hold the unload
    }
    if (waiter_ != nullptr) waiter_->Wake();
    if (watcher_.joinable()) watcher_.join();
    MutexLock lock(mu_);
    FailPending();  // a decoupled request that never sent FINAL ends here (unload, stop)
    if (stub_ == nullptr) {
      model_->settings->metrics->ReleaseOwner(metrics_owner_);
      return;
    }
    // finalize(), bounded by the stub timeout; a stub that does not answer is killed.
    const auto deadline = std::chrono::steady_clock::now() + model_->settings->stub_timeout;
    if (stub_->Write(R"({"op":"finalize"})", {}).ok()) {
      while (true) {
        StatusOr<Frame> f = stub_->Read(deadline);
        if (!f.ok()) break;
        StatusOr<StubMessage> m = ParseStubMessage(f->json, f->payload.size());
        if (m.ok() && m->op == "metric" && HandleMetric(f->json).ok()) continue;
        if (!m.ok() || m->op != "log") break;
        Log(*model_->settings, StubLogLevel(m->level), m->message);
      }
    }
    stub_->WaitOrKill(std::chrono::milliseconds(2000));
    model_->settings->metrics->ReleaseOwner(metrics_owner_);  // its families leave /metrics
  }

  // Starts the stub, runs initialize(args) and the watcher that restarts a stub that dies while
  // the instance is idle. The error carries the Python error text.
  Status StartFirst() {
    MutexLock lock(mu_);
    NEREID_RETURN_IF_ERROR(Start());
    NEREID_ASSIGN_OR_RETURN(waiter_, ExitWaiter::Create());
    watcher_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "python-watch");  // docs/threading.md
      Watch();
    });
    return Status::Ok();
  }

  Status Execute(const backend::ExecuteArgs& args) override {
    try {
      if (restarting_) return NotHealthy();  // the watcher is starting a new stub
      MutexLock lock(mu_);
      if (stub_ == nullptr) {  // the last restart failed: try again
        if (Status s = Start(); !s.ok()) {
          Log(*model_->settings, backend::LogLevel::kError,
              "python backend: restarting the stub of '" + options_.name +
                  "' failed: " + s.message());
          ReportHealth(false, RestartFailed(s));
          return NotHealthy();
        }
        ReportHealth(true, "");
        waiter_->Wake();  // watch the new stub
      }
      broken_ = false;
      Status s = RunOnStub(args);
      if (broken_) {  // the stub died, hung or sent garbage: the watcher restarts it
        Log(*model_->settings, backend::LogLevel::kError,
            "python backend: stub of '" + options_.name + "' (pid " + std::to_string(stub_->pid()) +
                ") " + std::string(s.message()) + "; restarting it");
        restarting_ = true;
        ReportHealth(false, Restarting());
        FailPending();
        stub_.reset();  // kills it; the watcher sees it gone
        return NotHealthy();
      }
      if (!pending_.empty()) waiter_->Wake();  // the watcher reads the stub while we are idle
      return s;
    } catch (const std::exception& e) {
      return Internal(std::string("python backend: ") + e.what());
    }
  }

 private:
  std::string Restarting() const {
    return "stub process of instance '" + options_.name + "' is restarting";
  }
  std::string RestartFailed(const Status& s) const {
    return "stub process of instance '" + options_.name +
           "' failed to restart: " + std::string(s.message());
  }

  void ReportHealth(bool healthy, const std::string& reason) const {
    if (options_.report_health) options_.report_health(healthy, reason);
  }

  // Starts the stub and runs initialize(args).
  Status Start() REQUIRES(mu_) {
    // The previous stub's metrics go with it; the new one creates its own in initialize().
    model_->settings->metrics->ReleaseOwner(metrics_owner_);
    metrics_owner_ = next_metrics_owner++;
    claims_.Clear();  // the pool went with the previous stub
    NEREID_ASSIGN_OR_RETURN(stub_, StubProcess::Start(model_->command));
    starting_pid_ = stub_->pid();
    if (stopping_) stub_->Kill();  // the destructor may have missed starting_pid_
    Status s = Initialize();
    starting_pid_ = 0;
    if (!s.ok()) stub_.reset();
    return s;
  }

  Status Initialize() REQUIRES(mu_) {
    NEREID_RETURN_IF_ERROR(stub_->Write(InitMessage(*model_, options_), {}));
    while (true) {
      StatusOr<Frame> f = stub_->Read(std::chrono::steady_clock::time_point::max());
      if (!f.ok()) return Internal("Stub process '" + options_.name + "' is not healthy.");
      NEREID_ASSIGN_OR_RETURN(StubMessage m, ParseStubMessage(f->json, f->payload.size()));
      if (m.op == "log") {
        Log(*model_->settings, StubLogLevel(m.level), m.message);
      } else if (m.op == "metric") {
        NEREID_RETURN_IF_ERROR(HandleMetric(f->json));
      } else if (m.op == "ok") {
        return Status::Ok();
      } else {
        return Internal(m.message);
      }
    }
  }

  // A pb_utils.MetricFamily / Metric call of the stub: applied to the backend's CustomMetrics and
  // answered (but "release"). A malformed message is an error of the channel.
  Status HandleMetric(const std::string& json) REQUIRES(mu_) {
    NEREID_ASSIGN_OR_RETURN(MetricMessage m, ParseMetricMessage(json));
    CustomMetrics& metrics = *model_->settings->metrics;
    StatusOr<double> result = 0.0;
    switch (m.action) {
      case MetricMessage::Action::kRelease:
        metrics.Release(metrics_owner_, m.id);
        return Status::Ok();
      case MetricMessage::Action::kFamily: {
        StatusOr<int64_t> id = metrics.NewFamily(metrics_owner_, m.name, m.description, m.kind);
        result = id.ok() ? StatusOr<double>(static_cast<double>(*id)) : id.status();
        break;
      }
      case MetricMessage::Action::kMetric: {
        StatusOr<int64_t> id = metrics.NewMetric(metrics_owner_, m.id, m.labels, m.buckets);
        result = id.ok() ? StatusOr<double>(static_cast<double>(*id)) : id.status();
        break;
      }
      case MetricMessage::Action::kApply:
        result = metrics.Apply(metrics_owner_, m.id, m.op, m.value);
        break;
    }
    return stub_->Write(EncodeMetricAnswer(m.tag, result), {});
  }

  // The watcher thread: restarts the stub whenever the one it watches is gone (killed from
  // outside, crashed, or killed by Execute after a failure), reporting the instance unhealthy
  // meanwhile (docs/adr/0015-instance-health.md).
  void Watch() {
    while (!stopping_) {
      pid_t pid = 0;
      int read_fd = -1;     // the stub's socket while requests of earlier executions still send
      int timeout_ms = -1;  // until the next pending request's deadline
      {
        MutexLock lock(mu_);
        timeout_ms = ExpirePending();
        if (stub_ != nullptr) {
          pid = stub_->pid();
          if (!pending_.empty()) {
            if (stub_->Readable()) {
              ReadIdle();
              continue;
            }
            read_fd = stub_->fd();
          }
        }
      }
      const ExitWaiter::Event event = waiter_->Wait(pid, read_fd, timeout_ms);
      if (event != ExitWaiter::Event::kExited || stopping_) continue;  // readable: read above
      MutexLock lock(mu_);  // waits for an Execute in flight, which fails on the dead stub
      if (stopping_) break;
      if (stub_ != nullptr && stub_->pid() != pid) continue;  // already replaced
      if (stub_ != nullptr) {
        Log(*model_->settings, backend::LogLevel::kError,
            "python backend: stub of '" + options_.name + "' (pid " + std::to_string(pid) +
                ") exited; restarting it");
      }
      Restart();
    }
  }

  // Replaces a dead (or broken) stub, failing the requests still waiting for its responses.
  void Restart() REQUIRES(mu_) {
    restarting_ = true;
    ReportHealth(false, Restarting());
    FailPending();
    stub_.reset();  // reaps it
    Status s = Start();
    restarting_ = false;
    if (s.ok()) {
      Log(*model_->settings, backend::LogLevel::kInfo,
          "python backend: stub of '" + options_.name + "' restarted (pid " +
              std::to_string(stub_->pid()) + ")");
      ReportHealth(true, "");
    } else if (!stopping_) {
      Log(*model_->settings, backend::LogLevel::kError,
          "python backend: restarting the stub of '" + options_.name + "' failed: " + s.message());
      ReportHealth(false, RestartFailed(s));
    }
  }

  // The instance is idle and the stub sent something (a sender thread of a decoupled model): one
  // frame, handled as during an execution. A stub that breaks the protocol is restarted.
  void ReadIdle() REQUIRES(mu_) {
    broken_ = false;
    const auto deadline = std::chrono::steady_clock::now() + model_->settings->stub_timeout;
    bool done = false;
    Status s = ReadDecoupledFrame(nullptr, deadline, &done);
    if (s.ok() && done) s = Channel(Internal("unexpected 'done' message"));
    if (s.ok()) return;
    broken_ = true;
    Log(*model_->settings, backend::LogLevel::kError,
        "python backend: stub of '" + options_.name + "' (pid " + std::to_string(stub_->pid()) +
            ") " + std::string(s.message()) + "; restarting it");
    Restart();
  }

  // Fails the pending requests that sent nothing for stub-timeout-seconds (a sender kept and
  // never used: without it an unload or a server stop, which wait for every request, would wait
  // forever). Returns the milliseconds until the next deadline (-1: none).
  int ExpirePending() REQUIRES(mu_) {
    const auto now = std::chrono::steady_clock::now();
    auto next = std::chrono::steady_clock::time_point::max();
    std::vector<int64_t> expired;
    for (const auto& [id, p] : pending_) {
      if (p.deadline <= now) {
        expired.push_back(id);
      } else {
        next = std::min(next, p.deadline);
      }
    }
    for (int64_t id : expired) {
      const std::shared_ptr<backend::ResponseSender> sender = pending_[id].sender;
      FinishRequest(id);
      (void)sender->SendError(NotHealthy(), backend::kResponseFinal);
    }
    if (next == std::chrono::steady_clock::time_point::max()) return -1;
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1);
  }

  // Fails every request still waiting for its FINAL (the stub is gone or the instance ends).
  void FailPending() REQUIRES(mu_) {
    for (auto& [id, p] : pending_) {
      (void)p.sender->SendError(NotHealthy(), backend::kResponseFinal);
    }
    pending_.clear();
    group_left_.clear();
    claims_.Clear();
  }

  // A decoupled request got its FINAL (or its execution failed): its group's blocks may go once
  // every request of the group is done and its execute returned.
  void FinishRequest(int64_t id) REQUIRES(mu_) {
    auto it = pending_.find(id);
    if (it == pending_.end()) return;
    const int64_t group = it->second.group;
    pending_.erase(it);
    if (--group_left_[group] == 0 && group != executing_group_) CloseGroup(group);
  }

  void CloseGroup(int64_t group) REQUIRES(mu_) {
    group_left_.erase(group);
    claims_.Close(group);
  }

  // Blocks written for the stub since the last call may be viewed by any request still sending.
  void ClaimWritten() REQUIRES(mu_) {
    for (uint64_t offset : stub_->TakeWrittenBlocks()) claims_.ClaimByAll(offset);
  }

  // Frees the pool's blocks no request may view any more (ADR 0014): all of them when no
  // decoupled request is still sending.
  void FreeBlocks() REQUIRES(mu_) {
    if (claims_.empty()) {
      (void)claims_.TakeLoose();
      stub_->ReleaseBlocks();
      return;
    }
    for (uint64_t offset : claims_.TakeLoose()) stub_->FreeBlock(offset);
  }

 private:
  Status NotHealthy() const {
    return Internal("Failed to process the request(s) for model instance '" + options_.name +
                    "', message: Stub process is not healthy.");
  }

  Status Failed(const std::string& message) const {
    return Internal("Failed to process the request(s) for model '" + options_.name +
                    "', message: " + message);
  }

  // Any error of the channel marks the stub broken (Execute restarts it). Not told by the code:
  // a model's own TritonError may be UNAVAILABLE too.
  Status Channel(const Status& s) REQUIRES(mu_) {
    if (s.ok()) return s;
    broken_ = true;
    return Status(StatusCode::kUnavailable, std::string(s.message()));
  }

  Status RunOnStub(const backend::ExecuteArgs& args) REQUIRES(mu_) {
    const auto deadline = std::chrono::steady_clock::now() + model_->settings->stub_timeout;
    FreeBlocks();  // those of finished executions (ADR 0014)
    const int64_t first_request = next_request_;
    next_request_ +=
        static_cast<int64_t>(args.requests.empty() ? args.senders.size() : args.requests.size());
    first_request_ = first_request;
    std::vector<std::string> requested;
    for (const std::string& name : model_->outputs) {
      if (args.outputs == nullptr || args.outputs->IsRequested(name)) requested.push_back(name);
    }
    std::deque<std::vector<int64_t>> shapes;  // the slices' shapes, viewed by `requests`
    const std::vector<RequestHeader> requests =
        SplitRequests(args.inputs, args.requests, requested, &shapes);
    std::vector<std::span<const char>> chunks;
    for (const RequestHeader& r : requests) {
      for (const auto& t : r.inputs) chunks.push_back(t.data);
    }
    const std::string header =
        EncodeExecute(options_.name, model_->model_name, requests, first_request);
    NEREID_RETURN_IF_ERROR(Channel(stub_->Write(header, chunks)));
    if (args.times != nullptr) args.times->input_end_ns = backend::ExecuteClockNs();
    if (model_->decoupled) {
      // The execution's requests, pending until their FINAL (also after execute returned).
      claims_.Open(first_request);
      executing_group_ = first_request;
      group_left_[first_request] = static_cast<int>(args.senders.size());
      for (size_t i = 0; i < args.senders.size(); ++i) {
        pending_[first_request + static_cast<int64_t>(i)] = {args.senders[i], first_request,
                                                             deadline};
      }
      for (uint64_t offset : stub_->TakeWrittenBlocks()) claims_.Claim(offset, first_request);
      Status s = ReadDecoupled(args, deadline);
      executing_group_ = -1;
      if (!s.ok()) {  // the core fails the execution's requests: later sends for them are dropped
        for (size_t i = 0; i < args.senders.size(); ++i) {
          FinishRequest(first_request + static_cast<int64_t>(i));
        }
      }
      if (group_left_.count(first_request) != 0 && group_left_[first_request] == 0) {
        CloseGroup(first_request);
      }
      return s;
    }
    return ReadResult(args, requests, deadline);
  }

  Status ReadResult(const backend::ExecuteArgs& args, std::span<const RequestHeader> requests,
                    std::chrono::steady_clock::time_point deadline) REQUIRES(mu_) {
    while (true) {
      FrameSizes sizes;
      StatusOr<std::string> json = stub_->ReadHeader(&sizes, deadline);
      NEREID_RETURN_IF_ERROR(Channel(json.status()));
      StatusOr<StubMessage> m = ParseStubMessage(*json, sizes.payload_size);
      if (!m.ok() || m->op != "result") {
        std::vector<char> payload;
        if (m.ok() && (m->op == "bls" || m->op == "load_model")) {
          NEREID_RETURN_IF_ERROR(Channel(ReadPayload(sizes.payload_size, deadline, &payload)));
        } else {
          NEREID_RETURN_IF_ERROR(Channel(stub_->Skip(sizes.payload_size, deadline)));
        }
        NEREID_RETURN_IF_ERROR(Channel(m.status()));
        if (m->op == "log") {
          Log(*model_->settings, StubLogLevel(m->level), m->message);
          continue;
        }
        if (m->op == "metric") {
          NEREID_RETURN_IF_ERROR(Channel(HandleMetric(*json)));
          continue;
        }
        StatusOr<bool> answered = AnswerQuestion(*m, payload, deadline, &args);
        NEREID_RETURN_IF_ERROR(Channel(answered.status()));
        if (*answered) continue;
        if (m->op == "error") return Failed(m->message);
        return Channel(Internal("unexpected '" + m->op + "' message"));
      }
      if (args.times != nullptr) args.times->output_start_ns = backend::ExecuteClockNs();
      if (requests.size() == 1) return WriteOutputs(*m, sizes.payload_size, args, deadline);
      // Several requests: their outputs are concatenated per output, through one buffer.
      std::vector<char> payload;
      try {
        payload.resize(sizes.payload_size);
      } catch (const std::exception&) {
        return Channel(Internal("the Python stub sent a payload of " +
                                std::to_string(sizes.payload_size) +
                                " bytes, more than can be allocated"));
      }
      NEREID_RETURN_IF_ERROR(Channel(stub_->ReadExact(payload, deadline)));
      std::vector<int64_t> rows;
      for (const auto& info : args.requests) rows.push_back(info.batch_size);
      Status s = GatherOutputs(m->responses, payload, requests, rows, args.outputs);
      if (!s.ok() && s.code() == StatusCode::kInternal && m->responses.size() != requests.size()) {
        return Failed(std::string(s.message()));
      }
      return s;
    }
  }

  Status ReadPayload(uint64_t size, std::chrono::steady_clock::time_point deadline,
                     std::vector<char>* payload) REQUIRES(mu_) {
    try {
      payload->resize(size);
    } catch (const std::exception&) {
      return Internal("the Python stub sent a payload of " + std::to_string(size) +
                      " bytes, more than can be allocated");
    }
    return stub_->ReadExact(*payload, deadline);
  }

  // Answers what the stub asks during an execution (BLS, is_cancelled, model control); false
  // when `m` is no question.
  StatusOr<bool> AnswerQuestion(const StubMessage& m, std::span<const char> payload,
                                std::chrono::steady_clock::time_point deadline,
                                const backend::ExecuteArgs* args) REQUIRES(mu_) {
    if (m.op == "bls") {
      NEREID_RETURN_IF_ERROR(m.decoupled ? RunBlsStream(m, payload, deadline)
                                         : RunBls(m, payload, deadline));
    } else if (m.op == "is_cancelled") {
      NEREID_RETURN_IF_ERROR(AnswerCancelled(m, args));
    } else if (m.op == "model_ready" || m.op == "load_model" || m.op == "unload_model") {
      NEREID_RETURN_IF_ERROR(AnswerControl(m, payload));
    } else {
      return false;
    }
    return true;
  }

  // pb_utils.is_model_ready / load_model / unload_model through the server.
  Status AnswerControl(const StubMessage& m, std::span<const char> payload) REQUIRES(mu_) {
    const backend::ModelControl& control = model_->settings->control;
    Status error = Status::Ok();
    bool ready = false;
    if (m.op == "model_ready") {
      StatusOr<bool> r = control.is_ready ? control.is_ready(m.model_name, m.model_version)
                                          : StatusOr<bool>(false);
      if (r.ok()) {
        ready = *r;
      } else {
        error = r.status();
      }
    } else if (m.op == "load_model") {
      std::vector<std::pair<std::string, std::string>> files;
      for (const auto& [path, t] : m.files) {
        files.emplace_back(path, std::string(payload.data() + t.offset, t.size));
      }
      error = control.load ? control.load(m.model_name, m.config, files) : NoModelControl();
    } else {
      error = control.unload ? control.unload(m.model_name, m.unload_dependents) : NoModelControl();
    }
    return stub_->Write(EncodeControlAnswer(m.tag, error, ready), {});
  }

  static backend::InferCall MakeCall(const StubMessage& m, std::span<const char> payload,
                                     std::vector<backend::TensorRef>* inputs) {
    backend::InferCall call;
    call.model_name = m.model_name;
    call.model_version = m.model_version;
    call.id = m.request_id;
    call.requested_outputs = m.requested_outputs;
    call.timeout_us = m.timeout_us;
    call.correlation_id = m.correlation_id;
    call.correlation_id_str = m.correlation_id_str;
    call.flags = m.flags;
    call.parameters = m.parameters;
    call.decoupled = m.decoupled;
    for (const TensorDesc& t : m.inputs) {
      inputs->push_back(
          {t.name, t.data_type, t.shape, std::span<const char>(payload.data() + t.offset, t.size)});
    }
    call.inputs = *inputs;
    return call;
  }

  Status WriteBlsResult(int64_t tag, const StatusOr<std::vector<backend::InferTensor>>& result,
                        bool final) REQUIRES(mu_) {
    std::vector<std::span<const char>> chunks;
    if (result.ok()) {
      for (const auto& t : *result) chunks.emplace_back(t.data.data(), t.data.size());
    }
    const std::string header = result.ok()
                                   ? EncodeBlsStreamResult(tag, Status::Ok(), *result, final)
                                   : EncodeBlsStreamResult(tag, result.status(), {}, final);
    return stub_->Write(header, chunks);
  }

  // The responses of a decoupled BLS call, queued by the server's threads for the instance's.
  struct BlsStream {
    Mutex mu;
    std::condition_variable cv;
    std::deque<std::pair<StatusOr<std::vector<backend::InferTensor>>, bool>> queue GUARDED_BY(mu);
    void Push(StatusOr<std::vector<backend::InferTensor>> r, bool final) {
      {
        MutexLock lock(mu);
        queue.emplace_back(std::move(r), final);
      }
      cv.notify_one();
    }
  };

  // exec(decoupled=True): forwards each response to the stub as it comes (tagged, the last one
  // `final`); a call still running at `deadline` ends with a timed-out error.
  Status RunBlsStream(const StubMessage& m, std::span<const char> payload,
                      std::chrono::steady_clock::time_point deadline) REQUIRES(mu_) {
    std::vector<backend::TensorRef> inputs;
    backend::InferCall call = MakeCall(m, payload, &inputs);
    auto stream = std::make_shared<BlsStream>();
    call.on_response = [stream](StatusOr<std::vector<backend::InferTensor>> r) {
      stream->Push(std::move(r), false);
    };
    if (!model_->settings->infer) {
      stream->Push(Unsupported("BLS is not available in this server"), true);
    } else {
      model_->settings->infer(call, [stream](StatusOr<std::vector<backend::InferTensor>> r) {
        stream->Push(std::move(r), true);
      });
    }
    while (true) {
      UniqueLock lock(stream->mu);
      while (stream->queue.empty()) {
        if (lock.WaitUntil(stream->cv, deadline) == std::cv_status::timeout &&
            stream->queue.empty()) {
          lock.Unlock();
          return WriteBlsResult(m.tag, BlsTimedOut(m.model_name), true);
        }
      }
      auto [result, final] = std::move(stream->queue.front());
      stream->queue.pop_front();
      lock.Unlock();
      NEREID_RETURN_IF_ERROR(WriteBlsResult(m.tag, result, final));
      if (final) return Status::Ok();
    }
  }

  // Runs a BLS request of model.py on the server and answers the stub (its outputs or error);
  // a BLS call still running at `deadline` is answered as timed out.
  Status RunBls(const StubMessage& m, std::span<const char> payload,
                std::chrono::steady_clock::time_point deadline) REQUIRES(mu_) {
    std::vector<backend::TensorRef> inputs;
    backend::InferCall call = MakeCall(m, payload, &inputs);
    using Result = StatusOr<std::vector<backend::InferTensor>>;
    auto promise = std::make_shared<std::promise<Result>>();
    std::future<Result> future = promise->get_future();
    if (!model_->settings->infer) {
      promise->set_value(Unsupported("BLS is not available in this server"));
    } else {
      model_->settings->infer(call, [promise](Result r) { promise->set_value(std::move(r)); });
    }
    Result result = future.wait_until(deadline) == std::future_status::ready
                        ? future.get()
                        : Result(BlsTimedOut(m.model_name));
    return WriteBlsResult(m.tag, result, true);
  }

  // Answers request.is_cancelled() of request id `m.request`: the state of its response sender
  // (decoupled models; false once it sent FINAL), else the request's own cancellation state (API
  // v5) during the execution `args` (null: idle).
  Status AnswerCancelled(const StubMessage& m, const backend::ExecuteArgs* args) REQUIRES(mu_) {
    bool cancelled = false;
    if (m.request < 0 || m.request >= next_request_) {
      return Internal("is_cancelled for an unknown request");
    }
    if (model_->decoupled) {
      if (auto it = pending_.find(m.request); it != pending_.end()) {
        cancelled = it->second.sender->IsCancelled();
      }
    } else if (args != nullptr && m.request >= first_request_) {
      const auto i = static_cast<size_t>(m.request - first_request_);
      if (i < args->requests.size() && args->requests[i].is_cancelled) {
        cancelled = args->requests[i].is_cancelled();
      }
    }
    return stub_->Write(EncodeCancelled(m.tag, cancelled), {});
  }

  // Reads the payload of a "result" straight into the core's output buffers.
  Status WriteOutputs(const StubMessage& m, uint64_t payload_size, const backend::ExecuteArgs& args,
                      std::chrono::steady_clock::time_point deadline) REQUIRES(mu_) {
    Status result = Status::Ok();
    uint64_t pos = 0;
    if (m.responses.size() != 1) {
      result = Failed("the stub answered " + std::to_string(m.responses.size()) +
                      " responses for one request");
    } else if (m.responses[0].has_error) {
      const StubError& e = m.responses[0].error;
      result = Status(StubErrorCode(e.code), e.message);
    } else {
      for (const TensorDesc& t : m.responses[0].outputs) {
        if (t.offset != pos) {  // our stub writes tensors in order, back to back
          result = Channel(Internal("tensor '" + t.name + "' out of order"));
          break;
        }
        if (args.outputs == nullptr || !args.outputs->IsRequested(t.name)) {
          NEREID_RETURN_IF_ERROR(Channel(stub_->Skip(t.size, deadline)));
          pos += t.size;
          continue;
        }
        StatusOr<std::span<char>> dst =
            args.outputs->Allocate(t.name, t.data_type, t.shape, t.size);
        if (!dst.ok()) {
          result = dst.status();
          break;
        }
        NEREID_RETURN_IF_ERROR(Channel(stub_->ReadExact(dst->subspan(0, t.size), deadline)));
        pos += t.size;
      }
    }
    NEREID_RETURN_IF_ERROR(Channel(stub_->Skip(payload_size - pos, deadline)));
    return result;
  }

  // Reads the stub until the decoupled execute returned; requests without FINAL stay pending
  // (the watcher reads their responses while the instance is idle).
  Status ReadDecoupled(const backend::ExecuteArgs& args,
                       std::chrono::steady_clock::time_point deadline) REQUIRES(mu_) {
    bool done = false;
    while (!done) NEREID_RETURN_IF_ERROR(ReadDecoupledFrame(&args, deadline, &done));
    return Status::Ok();
  }

  // One frame of a decoupled model's stub, during the execution `args` (null: idle); `done` when
  // the execute returned.
  Status ReadDecoupledFrame(const backend::ExecuteArgs* args,
                            std::chrono::steady_clock::time_point deadline, bool* done)
      REQUIRES(mu_) {
    StatusOr<Frame> f = stub_->Read(deadline);
    NEREID_RETURN_IF_ERROR(Channel(f.status()));
    StatusOr<StubMessage> m = ParseStubMessage(f->json, f->payload.size());
    NEREID_RETURN_IF_ERROR(Channel(m.status()));
    if (m->op == "log") {
      Log(*model_->settings, StubLogLevel(m->level), m->message);
    } else if (m->op == "done") {
      *done = true;
    } else if (m->op == "metric") {
      NEREID_RETURN_IF_ERROR(Channel(HandleMetric(f->json)));
    } else if (StatusOr<bool> answered = AnswerQuestion(*m, f->payload, deadline, args);
               !answered.ok() || *answered) {
      NEREID_RETURN_IF_ERROR(Channel(answered.status()));
      ClaimWritten();  // a BLS answer: its blocks may be viewed by any request still sending
    } else if (m->op == "error" && args != nullptr) {
      return Failed(m->message);
    } else if (m->op == "send") {
      return Send(*m, f->payload);
    } else {
      return Channel(Internal("unexpected '" + m->op + "' message"));
    }
    return Status::Ok();
  }

  // A decoupled response: to the sender of request id `m.request`. A response for a request that
  // has ended (its execution failed) is dropped; the stub refuses sends after FINAL itself.
  Status Send(const StubMessage& m, std::span<const char> payload) REQUIRES(mu_) {
    if (m.request < 0 || m.request >= next_request_) {
      return Channel(Internal("response for an unknown request"));
    }
    auto it = pending_.find(m.request);
    if (it == pending_.end()) return Status::Ok();
    const std::shared_ptr<backend::ResponseSender> sender = it->second.sender;
    it->second.deadline = std::chrono::steady_clock::now() + model_->settings->stub_timeout;
    if (m.flags & backend::kResponseFinal) FinishRequest(m.request);
    if (m.response.has_error) {
      (void)sender->SendError(
          Status(StubErrorCode(m.response.error.code), m.response.error.message), m.flags);
      return Status::Ok();
    }
    std::vector<backend::TensorRef> refs;
    for (const TensorDesc& t : m.response.outputs) {
      refs.push_back(
          {t.name, t.data_type, t.shape, std::span<const char>(payload.data() + t.offset, t.size)});
    }
    if (Status s = sender->Send(refs, m.flags); !s.ok()) {
      Log(*model_->settings, backend::LogLevel::kError,
          "python backend: '" + options_.name + "': " + std::string(s.message()));
    }
    return Status::Ok();
  }

  const std::shared_ptr<const ModelShared> model_;
  const backend::InstanceOptions options_;
  // Held by Execute for the whole execution and by the watcher for a restart.
  Mutex mu_;
  std::unique_ptr<StubProcess> stub_ GUARDED_BY(mu_);
  bool broken_ GUARDED_BY(mu_) = false;        // set by Channel() during one Execute
  std::atomic<bool> restarting_{false};        // the watcher is replacing the stub
  std::atomic<bool> stopping_{false};          // the instance is being destroyed
  std::atomic<pid_t> starting_pid_{0};         // the stub running initialize(), for the destructor
  int64_t metrics_owner_ GUARDED_BY(mu_) = 0;  // the stub's CustomMetrics owner id
  // Request ids (EncodeExecute): the next one, and the first of the current execution.
  int64_t next_request_ GUARDED_BY(mu_) = 0;
  int64_t first_request_ GUARDED_BY(mu_) = 0;
  // Decoupled requests without FINAL yet, by id, with their execution (group, its first id) and
  // when they fail unless they send something (stub-timeout-seconds after their execute started
  // or their last response).
  struct Pending {
    std::shared_ptr<backend::ResponseSender> sender;
    int64_t group = 0;
    std::chrono::steady_clock::time_point deadline;
  };
  std::map<int64_t, Pending> pending_ GUARDED_BY(mu_);
  std::map<int64_t, int> group_left_ GUARDED_BY(mu_);  // group -> its requests still pending
  int64_t executing_group_ GUARDED_BY(mu_) = -1;       // the group whose execute runs
  BlockClaims claims_ GUARDED_BY(mu_);                 // who may still view which pool block
  std::unique_ptr<ExitWaiter> waiter_;                 // set before watcher_ starts
  std::thread watcher_;
};

class PythonModel final : public backend::Model {
 public:
  explicit PythonModel(std::shared_ptr<const ModelShared> shared) : shared_(std::move(shared)) {}

  StatusOr<std::unique_ptr<backend::ModelInstance>> CreateInstance(
      const backend::InstanceOptions& options) override {
    try {
      auto instance = std::make_unique<PythonInstance>(shared_, options);
      NEREID_RETURN_IF_ERROR(instance->StartFirst());
      return std::unique_ptr<backend::ModelInstance>(std::move(instance));
    } catch (const std::exception& e) {
      return Internal(std::string("python backend: ") + e.what());
    }
  }

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
      NEREID_ASSIGN_OR_RETURN(std::unique_ptr<StubProcess> stub,
                              StubProcess::Start({kPython, resources_ + "/nereid_python_stub.py",
                                                  resources_, options.model_path}));
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
      shared->command = {kPython,
                         resources_ + "/nereid_python_stub.py",
                         resources_,
                         options.model_path,
                         settings_->shm_default_size,
                         settings_->shm_growth_size};
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
