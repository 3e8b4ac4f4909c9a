#include "core/model/decoupled_sender.h"

#include <exception>
#include <optional>
#include <string>
#include <utility>

#include "common/logging.h"

namespace nereid {
namespace {

// What a response that ends with `error` counts as.
ResponseOutcome ErrorOutcome(const Status& error) {
  return error.code() == StatusCode::kCancelled ? ResponseOutcome::kCancel : ResponseOutcome::kFail;
}

}  // namespace

DecoupledSender::DecoupledSender(const ModelInfo& model, ModelStats* stats,
                                 std::unique_ptr<InferenceRequest> request, InferCallback done,
                                 ResponseProgress progress)
    : model_(model),
      stats_(stats),
      cancel_token_(request->cancel_token),
      server_stop_(request->server_stop),
      request_(std::move(request)),
      done_(std::move(done)),
      index_(progress.index),
      last_ns_(progress.last_ns != 0 ? progress.last_ns : NowNs()) {}

DecoupledSender::~DecoupledSender() {
  FailIfOpen(
      Internal("model '" + model_.name + "' released a request without sending a final response"));
}

bool DecoupledSender::FailIfOpen(const Status& error) {
  InferCallback done;
  {
    MutexLock lock(mu_);
    if (final_sent_) return false;
    final_sent_ = true;
    RecordLocked(ErrorOutcome(error));
    done = std::move(done_);
    request_.reset();
  }
  done(error);
  return true;
}

void DecoupledSender::FinishFromAllocator(
    const std::function<Status(InferenceResponse*)>& move_outputs) {
  InferCallback done;
  StatusOr<std::unique_ptr<InferenceResponse>> result = std::make_unique<InferenceResponse>();
  {
    MutexLock lock(mu_);
    if (final_sent_ || index_ > 0) return;
    final_sent_ = true;
    InferenceResponse& response = **result;
    response.model_name = model_.name;
    response.model_version = model_.version;
    response.id = request_->id;
    if (Status s = move_outputs(&response); !s.ok()) {
      RecordLocked(ResponseOutcome::kFail);
      result = s;
      request_.reset();
    } else {
      RecordLocked(ResponseOutcome::kSuccess);
      response.request = std::move(request_);
    }
    done = std::move(done_);
  }
  done(std::move(result));
}

std::optional<DecoupledSender::TakenBack> DecoupledSender::TakeBack() {
  MutexLock lock(mu_);
  if (final_sent_) return std::nullopt;
  final_sent_ = true;
  taken_back_ = true;
  return TakenBack{std::move(request_), std::move(done_), {index_, last_ns_}};
}

const InferenceRequest* DecoupledSender::UnansweredRequest() {
  MutexLock lock(mu_);
  return final_sent_ || index_ > 0 ? nullptr : request_.get();
}

Status DecoupledSender::RefuseAfterFinal(bool taken_back) const {
  if (taken_back) {
    LOG_ERROR(
        "model '{}' sent a response through the sender of an execution whose request it "
        "rescheduled; the response is dropped (the next execution has a new sender)",
        model_.name);
    return Internal("response sent after the request was rescheduled");
  }
  LOG_ERROR("model '{}' sent a response after the final one; the response is dropped", model_.name);
  return Internal("response sent after the final response of the request");
}

void DecoupledSender::RecordLocked(ResponseOutcome outcome) {
  const uint64_t now = NowNs();
  if (stats_ != nullptr) stats_->RecordResponse(index_, outcome, now - last_ns_, 0);
  last_ns_ = now;
  ++index_;
}

StatusOr<std::unique_ptr<InferenceResponse>> DecoupledSender::MakeResponse(
    std::span<const backend::TensorRef> outputs) const {
  auto response = std::make_unique<InferenceResponse>();
  response->model_name = model_.name;
  response->model_version = model_.version;
  response->id = request_->id;
  for (const backend::TensorRef& ref : outputs) {
    const TensorSpec* spec = model_.FindOutput(ref.name);
    if (spec == nullptr) {
      return Internal("model '" + model_.name + "' produced unexpected output '" +
                      std::string(ref.name) + "'");
    }
    if (ref.data_type != spec->data_type) {
      return Internal("model '" + model_.name + "' produced output '" + spec->name + "' of type " +
                      std::string(DataTypeWireName(ref.data_type)) + ", configuration says " +
                      std::string(DataTypeWireName(spec->data_type)));
    }
  }
  auto add = [&](const std::string& name) -> Status {
    for (const backend::TensorRef& ref : outputs) {
      if (ref.name != name) continue;
      const TensorSpec* spec = model_.FindOutput(name);
      InferOutput out;
      out.name = spec->name;
      out.data_type = ref.data_type;
      if (spec->has_reshape) {
        NEREID_ASSIGN_OR_RETURN(
            out.shape, Relayout(ref.shape, model_.max_batch_size > 0, spec->dims, spec->name));
      } else {
        out.shape.assign(ref.shape.begin(), ref.shape.end());
      }
      try {
        out.data.assign(ref.data.data(), ref.data.size());
      } catch (const std::exception&) {  // must not cross the plugin boundary
        return Internal("model '" + model_.name + "' output '" + name +
                        "' is larger than can be allocated");
      }
      response->outputs.push_back(std::move(out));
      return Status::Ok();
    }
    return Status::Ok();  // a response may carry a subset of the outputs
  };
  if (request_->outputs.empty()) {
    for (const TensorSpec& spec : model_.outputs) NEREID_RETURN_IF_ERROR(add(spec.name));
  } else {
    for (const RequestedOutput& o : request_->outputs) NEREID_RETURN_IF_ERROR(add(o.name));
  }
  return response;
}

Status DecoupledSender::Send(std::span<const backend::TensorRef> outputs, uint32_t flags) {
  const bool final = (flags & backend::kResponseFinal) != 0;
  if (outputs.empty() && !final) {
    return InvalidArgument("a response without outputs must carry the final flag");
  }
  InferCallback done;
  std::optional<StatusOr<std::unique_ptr<InferenceResponse>>> made;
  {
    MutexLock lock(mu_);
    if (final_sent_) return RefuseAfterFinal(taken_back_);
    made.emplace(MakeResponse(outputs));
    StatusOr<std::unique_ptr<InferenceResponse>>& response = *made;
    if (!final) {
      if (!response.ok()) return response.status();  // the plugin learns; nothing is sent
      if (!request_->on_response) {
        return Unsupported("model '" + model_.name +
                           "' sent several responses to a request whose protocol takes one");
      }
      RecordLocked(ResponseOutcome::kSuccess);
      request_->on_response(std::move(response));
      return Status::Ok();
    }
    final_sent_ = true;
    if (response.ok()) {
      RecordLocked(outputs.empty() ? ResponseOutcome::kEmpty : ResponseOutcome::kSuccess);
      (*response)->empty_final = outputs.empty();
      (*response)->request = std::move(request_);
    } else {
      RecordLocked(ResponseOutcome::kFail);
      request_.reset();
    }
    done = std::move(done_);
  }
  done(std::move(*made));
  return Status::Ok();
}

Status DecoupledSender::SendError(const Status& error, uint32_t flags) {
  const Status sent = error.ok() ? Internal("backend sent an error response with no error") : error;
  if ((flags & backend::kResponseFinal) != 0) {
    if (FailIfOpen(sent)) return Status::Ok();
    MutexLock lock(mu_);
    return RefuseAfterFinal(taken_back_);
  }
  MutexLock lock(mu_);
  if (final_sent_) return RefuseAfterFinal(taken_back_);
  if (!request_->on_response) {
    return Unsupported("model '" + model_.name +
                       "' sent several responses to a request whose protocol takes one");
  }
  RecordLocked(ErrorOutcome(sent));
  request_->on_response(sent);
  return Status::Ok();
}

}  // namespace nereid
