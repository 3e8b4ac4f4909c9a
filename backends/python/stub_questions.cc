#include "python/stub_questions.h"

#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "python/bls_frames.h"
#include "python/metric_message.h"

namespace nereid::backends::python {
namespace {

Status BlsTimedOut(const std::string& model) {
  return Unavailable("BLS request to model '" + model + "' timed out (stub-timeout-seconds)");
}

Status NoModelControl() { return Unsupported("model control is not available in this server"); }

// pb_utils.is_model_ready / load_model / unload_model through the server.
Status AnswerControl(const Settings& settings, const StubMessage& m, std::span<const char> payload,
                     StubProcess& stub) {
  const backend::ModelControl& control = settings.control;
  Status error = Status::Ok();
  bool ready = false;
  if (m.op == "model_ready") {
    StatusOr<bool> r =
        control.is_ready ? control.is_ready(m.model_name, m.model_version) : StatusOr<bool>(false);
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
  return stub.Write(EncodeControlAnswer(m.tag, error, ready), {});
}

// What a BLS call's inputs view (backend API v8 InferCall::inputs_owner): the frame's payload,
// taken from the reader, and pins of the pool's blocks, so that the called request reads them
// without a copy for as long as it lives, also after the stub moved on, the pool grew or the stub
// was restarted (ADR 0014).
struct BlsInputs {
  std::vector<char> payload;
  std::vector<std::shared_ptr<const void>> pins;
  std::deque<std::string> copies;  // views of the pool outside any block in use
};

// The call `m` asks for; its inputs view `*payload` (taken) or the stub's pool. `parent_trace`:
// the trace it continues (BlsParentTrace), or empty.
backend::InferCall MakeCall(const StubMessage& m, std::vector<char>* payload,
                            std::shared_ptr<const void> parent_trace, StubProcess& stub,
                            std::vector<backend::TensorRef>* inputs) {
  backend::InferCall call;
  call.parent_trace = std::move(parent_trace);
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
  auto owner = std::make_shared<BlsInputs>();
  owner->payload = std::move(*payload);
  const std::span<const char> bytes = owner->payload;
  inputs->reserve(m.inputs.size());
  for (const TensorDesc& t : m.inputs) {
    std::span<const char> data;
    if (!t.in_pool) {
      data = bytes.subspan(t.offset, t.size);
    } else if (std::optional<PinnedBytes> pinned = stub.Pin(t.offset, t.size)) {
      data = pinned->bytes;
      owner->pins.push_back(std::move(pinned->owner));
    } else {
      // A view of a block already freed (model.py kept an array past its execution): what the
      // pool holds now, copied, since the pool may hand the block out again. ParseStubMessage
      // checked that the tensor lies inside the pool (whose size never shrinks).
      const std::string& copy = owner->copies.emplace_back(stub.pool()->bytes().data() + t.offset,
                                                           static_cast<size_t>(t.size));
      data = copy;
    }
    inputs->push_back({t.name, t.data_type, t.shape, data});
  }
  call.inputs = *inputs;
  call.inputs_owner = std::move(owner);
  return call;
}

Status WriteBlsResult(StubProcess& stub, int64_t tag,
                      const StatusOr<std::vector<backend::InferTensor>>& result, bool final,
                      bool apart = false) {
  std::vector<std::span<const char>> chunks;
  std::string header;
  if (result.ok()) {
    if (EncodeBlsAnswer(tag, Status::Ok(), *result, final, &header)) {
      for (const auto& t : *result) chunks.emplace_back(t.data.data(), t.data.size());
    }
  } else {
    EncodeBlsAnswer(tag, result.status(), {}, final, &header);
  }
  if (apart) return stub.Write(header, chunks);  // pool size 0: the payload follows
  return stub.WriteBinary(&header, kBlsAnswerShmSlot, chunks);
}

// Runs a BLS request of execute() on the server and answers the stub (its outputs or error);
// a BLS call still running at `deadline` is answered as timed out.
Status RunBls(const Settings& settings, const StubMessage& m, std::vector<char>* payload,
              std::chrono::steady_clock::time_point deadline,
              std::shared_ptr<const void> parent_trace, StubProcess& stub) {
  std::vector<backend::TensorRef> inputs;
  backend::InferCall call = MakeCall(m, payload, std::move(parent_trace), stub, &inputs);
  call.allow_inline = true;  // this thread waits for the answer below
  using Result = StatusOr<std::vector<backend::InferTensor>>;
  auto promise = std::make_shared<std::promise<Result>>();
  std::future<Result> future = promise->get_future();
  if (!settings.infer) {
    promise->set_value(Unsupported("BLS is not available in this server"));
  } else {
    settings.infer(call, [promise](Result r) { promise->set_value(std::move(r)); });
  }
  Result result = future.wait_until(deadline) == std::future_status::ready
                      ? future.get()
                      : Result(BlsTimedOut(m.model_name));
  return WriteBlsResult(stub, m.tag, result, /*final=*/true);
}

}  // namespace

// Rung by a stream's Push when a "bls_next" waits on it; the instance's reader polls it.
struct BlsBell {
  const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  BlsBell() = default;
  BlsBell(const BlsBell&) = delete;
  BlsBell& operator=(const BlsBell&) = delete;
  ~BlsBell() {
    if (fd >= 0) close(fd);
  }
  void Ring() const {
    const uint64_t one = 1;
    if (fd >= 0) (void)!write(fd, &one, sizeof(one));
  }
  void Clear() const {
    uint64_t count = 0;
    if (fd >= 0) (void)!read(fd, &count, sizeof(count));
  }
};

// The responses of a decoupled BLS call, queued by the server's threads for the instance's; or
// the one answer of a call of a thread other than the execution's (BlsStreams::StartCall).
struct BlsStream {
  std::string model;
  bool apart = false;  // answers' tensors on the socket (bls_frames.h)
  std::shared_ptr<CancelToken> cancel = std::make_shared<CancelToken>();
  std::shared_ptr<const BlsBell> bell;
  // The stub's "bls_next" on this stream not answered yet: tag and deadline, in order. Used by
  // the instance's thread only (under the instance's lock, as BlsStreams).
  std::deque<std::pair<int64_t, std::chrono::steady_clock::time_point>> nexts;
  Mutex mu;
  std::deque<std::pair<StatusOr<std::vector<backend::InferTensor>>, bool>> queue GUARDED_BY(mu);
  bool dropped GUARDED_BY(mu) = false;  // nobody reads the rest: discard it
  bool wanted GUARDED_BY(mu) = false;   // `nexts` is not empty: Push rings the bell
  void Push(StatusOr<std::vector<backend::InferTensor>> r, bool final) {
    bool ring = false;
    {
      MutexLock lock(mu);
      if (dropped) return;
      queue.emplace_back(std::move(r), final);
      ring = wanted;
    }
    if (ring && bell != nullptr) bell->Ring();
  }
  void Drop() {
    cancel->Cancel();
    MutexLock lock(mu);
    dropped = true;
    queue.clear();
  }
};

BlsStreams::BlsStreams() : bell_(std::make_shared<BlsBell>()) {}

int BlsStreams::bell_fd() const { return bell_->fd; }

void BlsStreams::Start(const Settings& settings, const StubMessage& m, std::vector<char>* payload,
                       std::shared_ptr<const void> parent_trace, StubProcess& stub) {
  std::vector<backend::TensorRef> inputs;
  backend::InferCall call = MakeCall(m, payload, std::move(parent_trace), stub, &inputs);
  auto stream = std::make_shared<BlsStream>();
  call.on_response = [stream](StatusOr<std::vector<backend::InferTensor>> r) {
    stream->Push(std::move(r), false);
  };
  Launch(settings, m, call, stream);
}

void BlsStreams::StartCall(const Settings& settings, const StubMessage& m,
                           std::vector<char>* payload, std::shared_ptr<const void> parent_trace,
                           std::chrono::steady_clock::time_point deadline, StubProcess& stub) {
  std::vector<backend::TensorRef> inputs;
  backend::InferCall call = MakeCall(m, payload, std::move(parent_trace), stub, &inputs);
  auto stream = std::make_shared<BlsStream>();
  stream->apart = true;  // the caller may keep the outputs past any execution
  // Its answer: a "bls_next" of the call's own tag, waiting from now on.
  stream->nexts.emplace_back(m.tag, deadline);
  {
    MutexLock lock(stream->mu);
    stream->wanted = true;
  }
  ++waiting_;
  Launch(settings, m, call, stream);
}

void BlsStreams::Launch(const Settings& settings, const StubMessage& m, backend::InferCall& call,
                        const std::shared_ptr<BlsStream>& stream) {
  stream->model = m.model_name;
  stream->bell = bell_;
  call.cancel = stream->cancel;
  if (auto old = streams_.find(m.tag); old != streams_.end()) {
    waiting_ -= old->second->nexts.size();
    old->second->Drop();
  }
  streams_[m.tag] = stream;
  if (!settings.infer) {
    stream->Push(Unsupported("BLS is not available in this server"), true);
    return;
  }
  settings.infer(call, [stream](StatusOr<std::vector<backend::InferTensor>> r) {
    stream->Push(std::move(r), true);
  });
}

Status BlsStreams::Next(const StubMessage& m, std::chrono::steady_clock::time_point deadline,
                        StubProcess& stub) {
  auto it = streams_.find(m.request);
  if (it == streams_.end()) {
    return WriteBlsResult(stub, m.tag,
                          Internal("BLS stream " + std::to_string(m.request) + " is not open"),
                          /*final=*/true);
  }
  const std::shared_ptr<BlsStream> stream = it->second;
  UniqueLock lock(stream->mu);
  if (!stream->nexts.empty() || stream->queue.empty()) {
    // Nothing for it yet: answered by AnswerDue (a Push from now on rings the bell).
    stream->nexts.emplace_back(m.tag, deadline);
    stream->wanted = true;
    ++waiting_;
    return Status::Ok();
  }
  auto [result, final] = std::move(stream->queue.front());
  stream->queue.pop_front();
  lock.Unlock();
  if (final) streams_.erase(it);
  return WriteBlsResult(stub, m.tag, result, final);
}

Status BlsStreams::AnswerDue(StubProcess& stub) {
  bell_->Clear();  // before looking: a Push after this rings again
  if (waiting_ == 0) return Status::Ok();
  const auto now = std::chrono::steady_clock::now();
  for (auto it = streams_.begin(); it != streams_.end();) {
    const std::shared_ptr<BlsStream> stream = it->second;
    bool erase = false;
    while (!stream->nexts.empty() && !erase) {
      const auto [tag, deadline] = stream->nexts.front();
      std::optional<std::pair<StatusOr<std::vector<backend::InferTensor>>, bool>> response;
      {
        MutexLock lock(stream->mu);
        if (!stream->queue.empty()) {
          response.emplace(std::move(stream->queue.front()));
          stream->queue.pop_front();
        }
        stream->wanted = stream->nexts.size() > 1 || !response.has_value();
      }
      if (!response.has_value() && deadline > now) break;  // still waiting
      stream->nexts.pop_front();
      --waiting_;
      if (response.has_value()) {
        erase = response->second;
        NEREID_RETURN_IF_ERROR(
            WriteBlsResult(stub, tag, response->first, response->second, stream->apart));
        continue;
      }
      // Timed out: as a BLS call still running at its deadline; the call is cancelled.
      erase = true;
      stream->Drop();
      NEREID_RETURN_IF_ERROR(WriteBlsResult(stub, tag, BlsTimedOut(stream->model), /*final=*/true));
    }
    if (erase) {
      // The stream ended: "bls_next" still waiting on it (two threads on one iterator) get what a
      // closed stream gets.
      for (const auto& [tag, deadline] : stream->nexts) {
        --waiting_;
        NEREID_RETURN_IF_ERROR(WriteBlsResult(
            stub, tag, Internal("BLS stream " + std::to_string(it->first) + " is not open"), true));
      }
      stream->nexts.clear();
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
  return Status::Ok();
}

std::chrono::steady_clock::time_point BlsStreams::earliest() const {
  auto first = std::chrono::steady_clock::time_point::max();
  if (waiting_ == 0) return first;
  for (const auto& [id, stream] : streams_) {
    for (const auto& [tag, deadline] : stream->nexts) first = std::min(first, deadline);
  }
  return first;
}

Status BlsStreams::Cancel(const StubMessage& m, StubProcess& stub) {
  auto it = streams_.find(m.request);
  if (it != streams_.end()) {
    if (m.flags & 1) {
      const std::shared_ptr<BlsStream> stream = it->second;
      stream->Drop();
      streams_.erase(it);
      for (const auto& [tag, deadline] : stream->nexts) {
        --waiting_;
        NEREID_RETURN_IF_ERROR(WriteBlsResult(
            stub, tag, Internal("BLS stream " + std::to_string(m.request) + " is not open"), true));
      }
      stream->nexts.clear();
    } else {
      it->second->cancel->Cancel();
    }
  }
  return m.tag != 0 ? stub.Write(EncodeCancelled(m.tag, true), {}) : Status::Ok();
}

void BlsStreams::CancelAll(StubProcess* stub, const Status& why) {
  for (auto& [id, stream] : streams_) {
    stream->Drop();
    for (const auto& [tag, deadline] : stream->nexts) {
      if (stub != nullptr) (void)WriteBlsResult(*stub, tag, why, true);
    }
    stream->nexts.clear();
  }
  streams_.clear();
  waiting_ = 0;
}

bool IsServerQuestion(const StubMessage& m) {
  return m.op == "bls" || m.op == "bls_next" || m.op == "bls_cancel" || m.op == "model_ready" ||
         m.op == "load_model" || m.op == "unload_model";
}

Status AnswerServerQuestion(const Settings& settings, const StubMessage& m,
                            std::vector<char>* payload,
                            std::chrono::steady_clock::time_point deadline, bool executing,
                            std::shared_ptr<const void> parent_trace, BlsStreams& streams,
                            StubProcess& stub) {
  if (m.op == "bls_next") return streams.Next(m, deadline, stub);
  if (m.op == "bls_cancel") return streams.Cancel(m, stub);
  if (m.op != "bls") return AnswerControl(settings, m, *payload, stub);
  if (!m.decoupled && executing && !m.apart) {  // execute's own call
    return RunBls(settings, m, payload, deadline, std::move(parent_trace), stub);
  }
  if (!m.decoupled) {  // another thread's: not waited for (it may call this very instance)
    streams.StartCall(settings, m, payload, std::move(parent_trace), deadline, stub);
    return Status::Ok();
  }
  streams.Start(settings, m, payload, std::move(parent_trace), stub);
  return Status::Ok();
}

Status AnswerMetric(CustomMetrics& metrics, int64_t owner, const std::string& json,
                    StubProcess& stub) {
  NEREID_ASSIGN_OR_RETURN(MetricMessage m, ParseMetricMessage(json));
  StatusOr<double> result = 0.0;
  switch (m.action) {
    case MetricMessage::Action::kRelease:
      metrics.Release(owner, m.id);
      return Status::Ok();
    case MetricMessage::Action::kFamily: {
      StatusOr<int64_t> id = metrics.NewFamily(owner, m.name, m.description, m.kind);
      result = id.ok() ? StatusOr<double>(static_cast<double>(*id)) : id.status();
      break;
    }
    case MetricMessage::Action::kMetric: {
      StatusOr<int64_t> id = metrics.NewMetric(owner, m.id, m.labels, m.buckets);
      result = id.ok() ? StatusOr<double>(static_cast<double>(*id)) : id.status();
      break;
    }
    case MetricMessage::Action::kApply:
      result = metrics.Apply(owner, m.id, m.op, m.value);
      break;
  }
  return stub.Write(EncodeMetricAnswer(m.tag, result), {});
}

}  // namespace nereid::backends::python
