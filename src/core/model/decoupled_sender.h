// DecoupledSender: the core's backend::ResponseSender for one request of a decoupled model
// (backend_api.h). It turns each Send into an InferenceResponse: every response but the FINAL one
// goes to the request's `on_response`, the FINAL one (or the error that ends the request) to the
// request's InferCallback, exactly once. It records response statistics by response index.
//
// Ownership: shared by the scheduler (for the length of Execute) and the plugin (as long as it
// wants); it owns the request and its callback until FINAL. Destroyed without FINAL, it fails the
// request with INTERNAL so the request is never leaked.
// Thread-safety: Send/SendError/IsCancelled may be called from any thread; calls are serialised.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>

#include "common/thread_annotations.h"
#include "core/model/model_info.h"
#include "core/request/inference_request.h"
#include "core/stats/model_stats.h"
#include "nereid/backend_api.h"

namespace nereid {

// Where a request's responses stand (how many were sent, when the last one was), carried from one
// execution's sender to the next when the request is rescheduled (backend API v7), so response
// statistics go on counting by index.
struct ResponseProgress {
  uint64_t index = 0;
  uint64_t last_ns = 0;  // 0: now
};

class DecoupledSender final : public backend::ResponseSender {
 public:
  // `model` and `stats` must outlive the sender (the InferCallback keeps the model version alive).
  DecoupledSender(const ModelInfo& model, ModelStats* stats,
                  std::unique_ptr<InferenceRequest> request, InferCallback done,
                  ResponseProgress progress = {});
  ~DecoupledSender() override;

  // A request taken back for a reschedule, with what its next sender needs.
  struct TakenBack {
    std::unique_ptr<InferenceRequest> request;
    InferCallback done;
    ResponseProgress progress;
  };
  // Takes the request back for its next execution unless FINAL was already sent (nullopt then).
  // This sender refuses every later send (INTERNAL) and no longer fails the request when
  // destroyed.
  std::optional<TakenBack> TakeBack() EXCLUDES(mu_);

  Status Send(std::span<const backend::TensorRef> outputs, uint32_t flags) override EXCLUDES(mu_);
  Status SendError(const Status& error, uint32_t flags) override EXCLUDES(mu_);
  bool IsCancelled() const override {
    return (cancel_token_ != nullptr && cancel_token_->Probe()) ||
           (server_stop_ != nullptr && server_stop_->cancelled());
  }

  // Ends the request with `error` unless FINAL was already sent (Execute failed). Returns whether
  // it did.
  bool FailIfOpen(const Status& error) EXCLUDES(mu_);

  // For a plugin that answered as a one-response backend does, through the OutputAllocator, and
  // neither kept nor used its sender: ends the request with the outputs `move_outputs` puts into
  // the response (FINAL), unless a response was already sent.
  void FinishFromAllocator(const std::function<Status(InferenceResponse*)>& move_outputs)
      EXCLUDES(mu_);

  // The request while nothing has been sent for it, else null. The pointer stays valid only while
  // the caller holds the last reference to this sender (nobody else can then end the request).
  const InferenceRequest* UnansweredRequest() EXCLUDES(mu_);

 private:
  StatusOr<std::unique_ptr<InferenceResponse>> MakeResponse(
      std::span<const backend::TensorRef> outputs) const REQUIRES(mu_);
  Status RefuseAfterFinal(bool taken_back) const;
  void RecordLocked(ResponseOutcome outcome) REQUIRES(mu_);

  const ModelInfo& model_;
  ModelStats* const stats_;
  // The request's tokens (the request itself moves out at FINAL).
  const std::shared_ptr<const CancelToken> cancel_token_;
  const std::shared_ptr<const CancelToken> server_stop_;

  Mutex mu_;
  std::unique_ptr<InferenceRequest> request_ GUARDED_BY(mu_);
  InferCallback done_ GUARDED_BY(mu_);
  bool final_sent_ GUARDED_BY(mu_) = false;
  bool taken_back_ GUARDED_BY(mu_) = false;  // rescheduled: final_sent_ is set too
  uint64_t index_ GUARDED_BY(mu_) = 0;
  uint64_t last_ns_ GUARDED_BY(mu_) = 0;  // when the previous response (or the request) ended
};

}  // namespace nereid
