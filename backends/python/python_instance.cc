// The life of a Python model's instance (python_instance_internal.h): its stub's start, the
// watcher that restarts a dead stub, readiness, the decoupled requests still held after their
// execute returned, and the stub's end. The execution itself is in python_instance_execute.cc.
#include "python/python_instance.h"

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "common/config_json.h"
#include "python/python_instance_internal.h"

namespace nereid::backends::python {
namespace {

// Each stub process owns its custom-metric handles (CustomMetrics owner ids).
std::atomic<int64_t> next_metrics_owner{1};

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

}  // namespace

PythonInstance::~PythonInstance() {
  if (unload_id_ >= 0) model_->unload->Remove(unload_id_);
  stopping_ = true;
  if (const pid_t starting = starting_pid_.load(); starting > 0) {
    kill(starting, SIGKILL);  // a restart blocked in initialize() must not hold the unload
  }
  if (waiter_ != nullptr) waiter_->Wake();
  if (watcher_.joinable()) watcher_.join();
  MutexLock lock(mu_);
  // A "bls_next" still waiting is answered, so that the thread in next() can end before finalize.
  if (stub_ != nullptr) bls_streams_.CancelAll(stub_.get(), Unloaded());
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

Status PythonInstance::StartFirst() {
  MutexLock lock(mu_);
  NEREID_RETURN_IF_ERROR(Start());
  NEREID_ASSIGN_OR_RETURN(waiter_, ExitWaiter::Create());
  unload_id_ = model_->unload->Add([waiter = waiter_.get()] { waiter->Wake(); });
  watcher_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "python-watch");  // docs/threading.md
    Watch();
  });
  return Status::Ok();
}

Status PythonInstance::CheckReady() {
  if (!has_is_ready_) return Status::Ok();
  try {
    if (busy_ == 0 && !restarting_) {
      CountedLock lock(mu_, lock_waiters_);
      if (stub_ != nullptr && !stopping_) {
        StatusOr<std::string> answer = AskReady();
        if (!answer.ok()) return answer.status();
        MutexLock ready(ready_mu_);
        last_ready_ = std::move(*answer);
      }
    }
    MutexLock ready(ready_mu_);
    return last_ready_.empty() ? Status::Ok() : Unavailable(last_ready_);
  } catch (const std::exception& e) {
    return Internal(std::string("python backend: ") + e.what());
  }
}

Status PythonInstance::Execute(const backend::ExecuteArgs& args) {
  const BusyScope busy(busy_);
  try {
    if (restarting_) return NotHealthy();  // the watcher is starting a new stub
    CountedLock lock(mu_, lock_waiters_);
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
    // The watcher reads the stub while we are idle (and answers the "bls_next" still waiting);
    // after an error, what the execution may have left unread (a frame rung before it began).
    if (!pending_.empty() || bls_streams_.waiting() || !s.ok()) waiter_->Wake();
    return s;
  } catch (const std::exception& e) {
    return Internal(std::string("python backend: ") + e.what());
  }
}

Status PythonInstance::Start() {
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

Status PythonInstance::Initialize() {
  NEREID_RETURN_IF_ERROR(stub_->Write(InitMessage(*model_, options_), {}));
  while (true) {
    StatusOr<Frame> f = stub_->Read(std::chrono::steady_clock::time_point::max());
    if (!f.ok()) return Internal("Stub process '" + options_.name + "' is not healthy.");
    NEREID_ASSIGN_OR_RETURN(StubMessage m, Parse(f->json, f->payload.size()));
    if (m.op == "log") {
      Log(*model_->settings, StubLogLevel(m.level), m.message);
    } else if (m.op == "metric") {
      NEREID_RETURN_IF_ERROR(HandleMetric(f->json));
    } else if (m.op == "ok") {
      has_is_ready_ = m.has_is_ready;
      return Status::Ok();
    } else if (IsServerQuestion(m) && m.op != "bls") {
      // Model control from initialize() (Triton allows it there; the stub refuses BLS).
      NEREID_RETURN_IF_ERROR(AnswerServerQuestion(
          *model_->settings, m, &f->payload, std::chrono::steady_clock::time_point::max(),
          /*executing=*/false, nullptr, bls_streams_, *stub_));
    } else {
      return Internal(m.message);
    }
  }
}

void PythonInstance::Watch() {
  while (!stopping_) {
    pid_t pid = 0;
    // The stub's socket while requests of earlier executions still send or a "bls_next" waits;
    // the BLS streams' bell and the earliest deadline while a "bls_next" waits.
    int read_fd = -1;
    int bell_fd = -1;
    int idle_fd = -1;
    int timeout_ms = -1;
    {
      MutexLock lock(mu_);
      // The unload notice: the requests still held end now (Triton's would hold the unload).
      if (model_->unload->unloading() && (!pending_.empty() || bls_streams_.waiting())) {
        FailPending(Unloaded());
      }
      if (stub_ != nullptr && bls_streams_.waiting()) AnswerStreamsIdle();
      // A thread of model.py asked while idle (the bell), or an execution that returned early
      // left frames unread (it woke us): nobody else reads them. Not while an execution waits
      // for the lock: it reads them, and looking again and again would only keep it waiting.
      if (stub_ != nullptr &&
          (stub_->RingCount() != 0 || (pending_.empty() && !bls_streams_.waiting() &&
                                       lock_waiters_.load() == 0 && stub_->Readable()))) {
        ReadRung();
        continue;
      }
      if (stub_ != nullptr) {
        pid = stub_->pid();
        idle_fd = stub_->idle_bell();
        if (!pending_.empty() || bls_streams_.waiting()) {
          if (stub_->Readable()) {
            ReadIdle();
            continue;
          }
          read_fd = stub_->fd();
        }
        if (bls_streams_.waiting()) {
          bell_fd = bls_streams_.bell_fd();
          const auto left = std::chrono::ceil<std::chrono::milliseconds>(
                                bls_streams_.earliest() - std::chrono::steady_clock::now())
                                .count();
          timeout_ms = static_cast<int>(std::clamp<decltype(left)>(left, 0, 1 << 30));
          if (bell_fd < 0) timeout_ms = std::min(timeout_ms, 10);  // no eventfd: poll
        }
      }
    }
    const ExitWaiter::Event event = waiter_->Wait(pid, read_fd, timeout_ms, bell_fd, idle_fd);
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

void PythonInstance::Restart() {
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

StatusOr<std::string> PythonInstance::AskReady() {
  const BusyScope busy(busy_);
  broken_ = false;
  const auto deadline = std::chrono::steady_clock::now() + model_->settings->stub_timeout;
  std::string answer;
  ready_answer_ = &answer;
  Status s = Channel(stub_->Write(R"({"op":"is_ready"})", {}));
  for (bool done = false; s.ok() && !done;) s = ReadDecoupledFrame(nullptr, deadline, &done);
  ready_answer_ = nullptr;
  if (bls_streams_.waiting()) waiter_->Wake();  // a "bls_next" came meanwhile: the watcher's
  if (s.ok()) return answer;
  RestartBroken(s, " while asked is_ready()");
  return Unavailable(std::string(NotHealthy().message()));
}

void PythonInstance::RestartBroken(const Status& why, std::string_view during) {
  Log(*model_->settings, backend::LogLevel::kError,
      "python backend: stub of '" + options_.name + "' (pid " + std::to_string(stub_->pid()) +
          ") " + std::string(why.message()) + std::string(during) + "; restarting it");
  Restart();
}

void PythonInstance::AnswerStreamsIdle() {
  // A non-decoupled model's stream was opened by a thread while idle: as ReadRung's answers.
  if (!model_->decoupled) stub_->UsePool(false);
  const Status s = bls_streams_.AnswerDue(*stub_);
  stub_->UsePool(true);
  if (model_->decoupled) ClaimWritten();
  if (s.ok()) return;
  broken_ = true;
  RestartBroken(s);
}

void PythonInstance::ReadRung() {
  // The answers carry their tensors on the socket: model.py's thread may keep their arrays past
  // the next execution, which frees the pool's blocks (ADR 0014).
  // It stops when an execution (or an is_ready() question) waits for the instance's lock: that
  // one reads the frames left before its own answer, so a model's thread that writes without end
  // (a log line in a loop) cannot keep requests out.
  const pid_t pid = stub_->pid();
  stub_->UsePool(false);
  while (stub_ != nullptr && stub_->pid() == pid && lock_waiters_.load() == 0 &&
         stub_->Readable()) {
    ReadIdle();
  }
  if (stub_ != nullptr && stub_->pid() == pid) stub_->UsePool(true);
}

void PythonInstance::ReadIdle() {
  const BusyScope busy(busy_);
  broken_ = false;
  const auto deadline = std::chrono::steady_clock::now() + model_->settings->stub_timeout;
  bool done = false;
  Status s = ReadDecoupledFrame(nullptr, deadline, &done);
  if (s.ok() && done) s = Channel(Internal("unexpected 'done' message"));
  if (s.ok()) return;
  broken_ = true;
  RestartBroken(s);
}

void PythonInstance::FailPending(const Status& error) {
  const Status status = error.ok() ? NotHealthy() : error;
  for (auto& [id, p] : pending_) {
    (void)p.sender->SendError(status, backend::kResponseFinal);
  }
  pending_.clear();
  group_left_.clear();
  claims_.Clear();
  // The called requests are cancelled (API v6). On the unload notice (`error`) the stub lives on:
  // its "bls_next" still waiting get the error.
  bls_streams_.CancelAll(error.ok() ? nullptr : stub_.get(), status);
}

void PythonInstance::FinishRequest(int64_t id) {
  auto it = pending_.find(id);
  if (it == pending_.end()) return;
  const int64_t group = it->second.group;
  pending_.erase(it);
  if (--group_left_[group] == 0 && group != executing_group_) CloseGroup(group);
}

void PythonInstance::FreeBlocks() {
  if (claims_.empty()) {
    (void)claims_.TakeLoose();
    stub_->ReleaseBlocks();
    return;
  }
  for (uint64_t offset : claims_.TakeLoose()) stub_->FreeBlock(offset);
}

StatusOr<std::unique_ptr<backend::ModelInstance>> StartPythonInstance(
    std::shared_ptr<const ModelShared> model, backend::InstanceOptions options) {
  auto instance = std::make_unique<PythonInstance>(std::move(model), std::move(options));
  NEREID_RETURN_IF_ERROR(instance->StartFirst());
  return std::unique_ptr<backend::ModelInstance>(std::move(instance));
}

}  // namespace nereid::backends::python
