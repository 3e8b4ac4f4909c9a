// One execution on a Python model's stub (python_instance_internal.h): the requests written to
// the stub, the stub's questions answered while execute runs (BLS, is_cancelled, model control,
// release flags), and its results read into the core's outputs or sent through decoupled
// response senders.
#include <poll.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "python/bls_frames.h"
#include "python/python_instance_internal.h"

namespace nereid::backends::python {

Status PythonInstance::RunOnStub(const backend::ExecuteArgs& args) {
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
  NEREID_RETURN_IF_ERROR(EncodeExecute(requests, first_request, &header_));
  NEREID_RETURN_IF_ERROR(Channel(stub_->WriteBinary(&header_, kExecuteShmSlot, chunks)));
  if (args.times != nullptr) args.times->input_end_ns = backend::ExecuteClockNs();
  if (model_->decoupled) {
    // The execution's requests, pending until their FINAL (also after execute returned).
    claims_.Open(first_request);
    executing_group_ = first_request;
    group_left_[first_request] = static_cast<int>(args.senders.size());
    for (size_t i = 0; i < args.senders.size(); ++i) {
      pending_[first_request + static_cast<int64_t>(i)] = {args.senders[i], first_request};
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

Status PythonInstance::ReadResult(const backend::ExecuteArgs& args,
                                  std::span<const RequestHeader> requests,
                                  std::chrono::steady_clock::time_point deadline) {
  while (true) {
    FrameSizes sizes;
    NEREID_RETURN_IF_ERROR(AwaitStub(deadline));
    NEREID_RETURN_IF_ERROR(Channel(stub_->ReadHeader(&sizes, deadline, &header_)));
    const std::string& json = header_;
    StatusOr<StubMessage> m = Parse(json, sizes.payload_size);
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
        NEREID_RETURN_IF_ERROR(Channel(HandleMetric(json)));
        continue;
      }
      if (m->op == "release") {
        NEREID_RETURN_IF_ERROR(Channel(Release(*m, args)));
        continue;
      }
      StatusOr<bool> answered = AnswerQuestion(*m, &payload, deadline, &args);
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
    Status s = GatherOutputs(m->responses, payload, PoolBytes(), requests, rows, args.outputs,
                             args.request_errors, args.release_flags);
    if (!s.ok() && s.code() == StatusCode::kInternal && m->responses.size() != requests.size()) {
      return Failed(std::string(s.message()));
    }
    return s;
  }
}

Status PythonInstance::AwaitStub(std::chrono::steady_clock::time_point deadline) {
  using Clock = std::chrono::steady_clock;
  while (bls_streams_.waiting()) {
    NEREID_RETURN_IF_ERROR(Channel(bls_streams_.AnswerDue(*stub_)));
    if (model_->decoupled) ClaimWritten();  // as for any BLS answer (ReadDecoupledFrame)
    if (!bls_streams_.waiting() || stub_->Readable()) break;
    const Clock::time_point now = Clock::now();
    if (deadline <= now) break;
    const Clock::time_point until = std::min(deadline, bls_streams_.earliest());
    auto wait = std::chrono::ceil<std::chrono::milliseconds>(until - now).count();
    if (wait < 0) wait = 0;
    if (bls_streams_.bell_fd() < 0) wait = std::min<decltype(wait)>(wait, 10);  // no eventfd
    pollfd fds[2] = {{stub_->fd(), POLLIN, 0}, {bls_streams_.bell_fd(), POLLIN, 0}};
    const int timeout = static_cast<int>(std::min<decltype(wait)>(wait, 1 << 30));
    if (poll(fds, 2, timeout) < 0 && errno != EINTR) {
      return Channel(Internal(std::string("poll failed: ") + std::strerror(errno)));
    }
  }
  return Status::Ok();
}

Status PythonInstance::ReadPayload(uint64_t size, std::chrono::steady_clock::time_point deadline,
                                   std::vector<char>* payload) {
  try {
    payload->resize(size);
  } catch (const std::exception&) {
    return Internal("the Python stub sent a payload of " + std::to_string(size) +
                    " bytes, more than can be allocated");
  }
  return stub_->ReadExact(*payload, deadline);
}

StatusOr<bool> PythonInstance::AnswerQuestion(const StubMessage& m, std::vector<char>* payload,
                                              std::chrono::steady_clock::time_point deadline,
                                              const backend::ExecuteArgs* args) {
  if (IsServerQuestion(m)) {
    // A BLS call with trace=request.trace() of a request of this execution is traced as its
    // child; any other id (a decoupled request answered while idle, a stale id) gives none.
    std::shared_ptr<const void> parent_trace =
        args != nullptr && m.op == "bls"
            ? BlsParentTrace(m.parent_request, first_request_, args->requests)
            : nullptr;
    NEREID_RETURN_IF_ERROR(AnswerServerQuestion(*model_->settings, m, payload, deadline,
                                                /*executing=*/args != nullptr,
                                                std::move(parent_trace), bls_streams_, *stub_));
  } else if (m.op == "is_cancelled") {
    NEREID_RETURN_IF_ERROR(AnswerCancelled(m, args));
  } else {
    return false;
  }
  return true;
}

Status PythonInstance::AnswerCancelled(const StubMessage& m, const backend::ExecuteArgs* args) {
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

Status PythonInstance::WriteOutputs(const StubMessage& m, uint64_t payload_size,
                                    const backend::ExecuteArgs& args,
                                    std::chrono::steady_clock::time_point deadline) {
  Status result = Status::Ok();
  uint64_t pos = 0;
  const bool rescheduled =
      !args.release_flags.empty() && (args.release_flags[0] & backend::kReleaseReschedule) != 0;
  if (rescheduled) {
    // No response for this execution (the stub checked it returned None).
  } else if (m.responses.size() != 1) {
    result = Failed("the stub answered " + std::to_string(m.responses.size()) +
                    " responses for one request");
  } else if (m.responses[0].has_error) {
    const StubError& e = m.responses[0].error;
    result = Status(StubErrorCode(e.code), e.message);
  } else {
    for (const TensorDesc& t : m.responses[0].outputs) {
      if (!t.in_pool && t.offset != pos) {  // our stub writes tensors in order, back to back
        result = Channel(Internal("tensor '" + t.name + "' out of order"));
        break;
      }
      const bool requested = args.outputs != nullptr && args.outputs->IsRequested(t.name);
      if (t.in_pool) {  // a view of the pool the model answered with: copied from there
        if (!requested) continue;
        StatusOr<std::span<char>> dst =
            args.outputs->Allocate(t.name, t.data_type, t.shape, t.size);
        if (!dst.ok()) {
          result = dst.status();
          break;
        }
        if (t.size != 0) std::memcpy(dst->data(), PoolBytes().data() + t.offset, t.size);
        continue;
      }
      if (!requested) {
        NEREID_RETURN_IF_ERROR(Channel(stub_->Skip(t.size, deadline)));
        pos += t.size;
        continue;
      }
      StatusOr<std::span<char>> dst = args.outputs->Allocate(t.name, t.data_type, t.shape, t.size);
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

Status PythonInstance::ReadDecoupled(const backend::ExecuteArgs& args,
                                     std::chrono::steady_clock::time_point deadline) {
  bool done = false;
  while (!done) NEREID_RETURN_IF_ERROR(ReadDecoupledFrame(&args, deadline, &done));
  return Status::Ok();
}

Status PythonInstance::ReadDecoupledFrame(const backend::ExecuteArgs* args,
                                          std::chrono::steady_clock::time_point deadline,
                                          bool* done) {
  NEREID_RETURN_IF_ERROR(AwaitStub(deadline));
  StatusOr<Frame> f = stub_->Read(deadline);
  NEREID_RETURN_IF_ERROR(Channel(f.status()));
  StatusOr<StubMessage> m = Parse(f->json, f->payload.size());
  NEREID_RETURN_IF_ERROR(Channel(m.status()));
  if (m->op == "log") {
    Log(*model_->settings, StubLogLevel(m->level), m->message);
  } else if (m->op == "done") {
    *done = true;
  } else if (m->op == "ready" && ready_answer_ != nullptr) {  // CheckReady's answer
    *ready_answer_ = m->message;
    *done = true;
  } else if (m->op == "metric") {
    NEREID_RETURN_IF_ERROR(Channel(HandleMetric(f->json)));
  } else if (m->op == "release" && args != nullptr) {
    NEREID_RETURN_IF_ERROR(Channel(Release(*m, *args)));
  } else if (StatusOr<bool> answered = AnswerQuestion(*m, &f->payload, deadline, args);
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

Status PythonInstance::Release(const StubMessage& m, const backend::ExecuteArgs& args) {
  const size_t count = args.requests.empty() ? args.senders.size() : args.requests.size();
  if (m.request < first_request_ || m.request >= first_request_ + static_cast<int64_t>(count)) {
    return Internal("release flags for a request not in the execution");
  }
  const auto i = static_cast<size_t>(m.request - first_request_);
  if (i < args.release_flags.size()) args.release_flags[i] = m.flags;
  if (model_->decoupled && (m.flags & backend::kReleaseReschedule) != 0) {
    FinishRequest(m.request);
  }
  return Status::Ok();
}

Status PythonInstance::Send(const StubMessage& m, std::span<const char> payload) {
  if (m.request < 0 || m.request >= next_request_) {
    return Channel(Internal("response for an unknown request"));
  }
  auto it = pending_.find(m.request);
  if (it == pending_.end()) return Status::Ok();
  const std::shared_ptr<backend::ResponseSender> sender = it->second.sender;
  if (m.flags & backend::kResponseFinal) FinishRequest(m.request);
  if (m.response.has_error) {
    (void)sender->SendError(Status(StubErrorCode(m.response.error.code), m.response.error.message),
                            m.flags);
    return Status::Ok();
  }
  std::vector<backend::TensorRef> refs;
  for (const TensorDesc& t : m.response.outputs) {
    refs.push_back({t.name, t.data_type, t.shape,
                    (t.in_pool ? PoolBytes() : payload).subspan(t.offset, t.size)});
  }
  if (Status s = sender->Send(refs, m.flags); !s.ok()) {
    Log(*model_->settings, backend::LogLevel::kError,
        "python backend: '" + options_.name + "': " + std::string(s.message()));
  }
  return Status::Ok();
}

}  // namespace nereid::backends::python
