// InferenceRequest and InferenceResponse: the protocol-neutral form of one inference, built by a
// frontend codec (HTTP JSON/binary, gRPC) and consumed by InferenceServer.
//
// Ownership: input tensors are views (`data`) into memory the request keeps alive through
// `KeepAlive` (the HTTP body, a gRPC message, buffers decoded from JSON). A request is owned by
// one thread at a time and handed over with std::unique_ptr.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/unique_function.h"
#include "core/request/cancel_token.h"
#include "core/request/parameters.h"
#include "core/tensor/shape.h"
#include "core/trace/trace.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace nereid {

struct InferInput {
  std::string name;
  DataType data_type = DataType::kInvalid;
  Shape shape;
  std::span<const char> data;  // row-major; BYTES length-prefixed; owned via KeepAlive
  Parameters parameters;
};

struct RequestedOutput {
  std::string name;
  Parameters parameters;  // frontend-specific ones (e.g. binary_data) stay here untouched
  // Set by the server when the client asked for this output in a shared memory region: the
  // bounds-checked range (pinned by the request) a lone request's output is allocated in.
  std::optional<std::span<char>> shared_memory;
};

class InferenceResponse;

class InferenceRequest {
 public:
  std::string model_name;
  int64_t model_version = -1;  // -1: the highest ready version
  std::string id;
  Parameters parameters;
  std::vector<InferInput> inputs;
  std::vector<RequestedOutput> outputs;  // empty: every output of the model

  // Keeps `owner` alive as long as the request; input views may point into it.
  void KeepAlive(std::shared_ptr<const void> owner) {
    if (owners_.empty()) owners_.reserve(4);  // one allocation for a request's usual few owners
    owners_.push_back(std::move(owner));
  }

  // Set by the server when the request is accepted (for statistics and timeouts).
  std::chrono::steady_clock::time_point received_at{};

  // Optional: set by a frontend that can learn the client gave up (cancel_token.h). Schedulers
  // drop a cancelled request instead of executing it.
  std::shared_ptr<const CancelToken> cancel_token;
  // Set by the server: cancelled when shutdown passes --exit-timeout-secs, so every request still
  // queued is answered at once instead of run.
  std::shared_ptr<const CancelToken> server_stop;
  // Set by a frontend that accepts several responses per request (decoupled models: gRPC
  // ModelStreamInfer, HTTP generate_stream). Called for every response but the last, in order,
  // never concurrently; the last (the FINAL one) goes to the InferCallback as usual. Responses
  // handed here carry no `request`.
  std::function<void(StatusOr<std::unique_ptr<InferenceResponse>>)> on_response;

  // Set by the server when the trace extension sampled this request (null otherwise, the usual
  // case): the model version records its timestamps and tensors into it.
  std::shared_ptr<trace::Trace> trace;

  bool IsCancelled() const {
    return (cancel_token != nullptr && cancel_token->cancelled()) ||
           (server_stop != nullptr && server_stop->cancelled());
  }
  // What a scheduler answers a request it dropped because IsCancelled(): Triton's CANCELLED
  // "Request was cancelled", or UNAVAILABLE when the server's shutdown abandoned it.
  Status CancelledStatus() const {
    if (server_stop != nullptr && server_stop->cancelled()) {
      return Unavailable("Server is stopping: the exit timeout expired before the request ran");
    }
    return Status(StatusCode::kCancelled, std::string(kRequestCancelledMessage));
  }

 private:
  std::vector<std::shared_ptr<const void>> owners_;
};

struct InferOutput {
  std::string name;
  DataType data_type = DataType::kInvalid;
  Shape shape;
  std::string data;  // owned bytes; BYTES length-prefixed
  // Written into the client's shared memory region the request named (data is then empty): the
  // reply carries only name, datatype and shape.
  bool in_shared_memory = false;
};

// How long the model computed an answer: its execution's compute_input, compute_infer and
// compute_output (shared by the requests batched into it). An ensemble reports the sum over its
// steps as its own compute durations, as Triton does. Zero when nothing was measured.
struct ComputeDurations {
  uint64_t input_ns = 0;
  uint64_t infer_ns = 0;
  uint64_t output_ns = 0;
  uint64_t start_ns = 0;  // NowNs() when computing began (0: not measured, e.g. an ensemble)
};

class InferenceResponse {
 public:
  std::string model_name;
  int64_t model_version = 0;
  std::string id;
  Parameters parameters;
  std::vector<InferOutput> outputs;  // in the order the request asked (model order if it didn't)
  ComputeDurations compute;          // set by the scheduler that ran it
  // A decoupled model's FINAL flag sent without outputs ("flags-only"): gRPC writes it only when
  // the client asked for triton_enable_empty_final_response.
  bool empty_final = false;

  // The request this answers, handed back so a frontend can read what it asked for (per-output
  // parameters such as binary_data) and so input memory is freed only after the reply is built.
  std::unique_ptr<InferenceRequest> request;
};

// Called exactly once per InferAsync, on an executor thread or (for early errors) on the
// caller's thread. It must not block for long: frontends post the reply to their own loop.
// Move-only: a frontend's per-request closure (up to UniqueFunction::kInlineBytes) and the core's
// one completion object per request (inference_server.cc) ride in it without an allocation.
using InferCallback = UniqueFunction<void(StatusOr<std::unique_ptr<InferenceResponse>>)>;

}  // namespace nereid
