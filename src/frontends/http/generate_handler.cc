#include "frontends/http/generate_handler.h"

#include <atomic>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/logging.h"
#include "common/thread_annotations.h"
#include "core/server/inference_server.h"
#include "frontends/http/json_generate_codec.h"
#include "frontends/http/status_mapping.h"

namespace nereid {
namespace {

constexpr std::string_view kSseContentType = "text/event-stream; charset=utf-8";
constexpr std::string_view kNotOneResponse =
    "generate expects model to produce exactly 1 response, use generate stream for model that "
    "generates various number of responses";

using Result = StatusOr<std::unique_ptr<InferenceResponse>>;

// The responses of one generate request, from the executor threads that deliver them.
class GenerateCall {
 public:
  GenerateCall(std::shared_ptr<HttpResponder> responder, bool streaming,
               std::shared_ptr<CancelToken> cancel)
      : responder_(std::move(responder)), streaming_(streaming), cancel_(std::move(cancel)) {}

  // InferAsync is running on this thread: a result delivered meanwhile on it is a refusal before
  // inference (validation), which Triton answers as a plain JSON error, not as a stream.
  void BeginSubmit() { submitter_ = std::this_thread::get_id(); }
  void EndSubmit() { submitter_ = std::thread::id(); }

  // One response; `final` for the request's last callback.
  void OnResult(Result result, bool final) {
    if (final && !result.ok() && submitter_.load() == std::this_thread::get_id()) {
      LOG_VERBOSE(1, "[request id: <id_unknown>] Infer failed: {}", result.status().message());
      return responder_->Send(ErrorResponse(400, result.status().message()));
    }
    bool error = false;
    std::string piece;  // the response's JSON (or error JSON); empty for a flags-only FINAL
    if (!result.ok()) {
      error = true;
      LOG_VERBOSE(1, "[request id: <id_unknown>] Infer failed: {}", result.status().message());
      piece = ErrorJson(result.status().message());
    } else if (!(*result)->empty_final) {
      StatusOr<std::string> json = EncodeGenerateResponse(**result);
      error = !json.ok();
      piece = json.ok() ? std::move(*json) : ErrorJson(json.status().message());
    }
    if (streaming_) return Stream(std::move(piece), error, final);
    Collect(std::move(piece), error, final);
  }

 private:
  // The responder is called with no lock held (it may run the connection's code inline).
  void Stream(std::string piece, bool error, bool final) {
    std::shared_ptr<HttpBodyStream> stream;
    std::optional<HttpResponse> start;
    {
      MutexLock lock(mu_);
      if (stream_ == nullptr) {
        // The first response fixes the status and starts the chunked reply; pieces pushed
        // before the reply is written wait in the stream.
        stream_ = std::make_shared<HttpBodyStream>();
        start.emplace(HttpResponse::Empty(error ? 400 : 200));
        start->headers.Add("Content-Type", std::string(kSseContentType));
        if (!piece.empty()) start->body.Append(SseEvent(piece));
        start->stream = stream_;
        piece.clear();
      }
      stream = stream_;
    }
    if (!piece.empty() && !stream->Push(SseEvent(piece))) cancel_->Cancel();
    if (final) stream->Close();
    if (start) responder_->Send(std::move(*start));
  }

  void Collect(std::string piece, bool error, bool final) {
    std::optional<HttpResponse> reply;
    {
      MutexLock lock(mu_);
      if (!piece.empty()) {
        if (pieces_.empty()) first_error_ = error;
        pieces_.push_back(std::move(piece));
      }
      if (!final) return;
      reply.emplace(pieces_.size() != 1
                        ? ErrorResponse(400, kNotOneResponse)
                        : HttpResponse::Json(first_error_ ? 400 : 200, std::move(pieces_[0])));
    }
    responder_->Send(std::move(*reply));
  }

  const std::shared_ptr<HttpResponder> responder_;
  const bool streaming_;
  const std::shared_ptr<CancelToken> cancel_;
  std::atomic<std::thread::id> submitter_{};
  Mutex mu_;
  std::shared_ptr<HttpBodyStream> stream_ GUARDED_BY(mu_);
  std::vector<std::string> pieces_ GUARDED_BY(mu_);
  bool first_error_ GUARDED_BY(mu_) = false;
};

std::vector<GenerateInputSpec> InputSpecs(const ModelMetadata& metadata) {
  std::vector<GenerateInputSpec> specs;
  specs.reserve(metadata.inputs.size());
  for (const TensorMetadata& t : metadata.inputs) {
    GenerateInputSpec spec;
    spec.name = t.name;
    spec.data_type = DataTypeFromWireName(t.datatype).value_or(DataType::kInvalid);
    spec.shape.assign(t.shape.begin(), t.shape.end());
    specs.push_back(std::move(spec));
  }
  return specs;
}

void Generate(InferenceServer* server, HttpRequest& request, const RouteParams& p,
              std::shared_ptr<HttpResponder> responder, bool streaming) {
  StatusOr<ModelMetadata> metadata = server->GetModelMetadata(p.model, p.version);
  if (!metadata.ok()) return responder->Send(ErrorResponse(metadata.status()));
  if (const std::string* coding = request.headers.Find("Content-Encoding");
      coding != nullptr && !EqualsIgnoreCase(*coding, "identity")) {
    return responder->Send(
        ErrorResponse(400, "Unsupported content-encoding, only 'identity' is supported."));
  }
  const std::vector<GenerateInputSpec> specs = InputSpecs(*metadata);
  StatusOr<std::unique_ptr<InferenceRequest>> decoded =
      DecodeGenerateRequest(request.body.view(), specs, p.model, p.version);
  if (!decoded.ok()) {
    LOG_VERBOSE(1, "[request id: <id_unknown>] Infer failed: {}", decoded.status().message());
    return responder->Send(ErrorResponse(400, decoded.status().message()));
  }
  // The connection's token (set when the client disconnects while the reply is owed), or a fresh
  // one; a stream whose write fails sets it too.
  std::shared_ptr<CancelToken> cancel =
      request.cancel_token != nullptr ? request.cancel_token : std::make_shared<CancelToken>();
  auto call = std::make_shared<GenerateCall>(std::move(responder), streaming, cancel);
  std::unique_ptr<InferenceRequest> infer = std::move(*decoded);
  infer->cancel_token = cancel;
  infer->on_response = [call](Result r) { call->OnResult(std::move(r), false); };
  call->BeginSubmit();
  server->InferAsync(std::move(infer), [call](Result r) { call->OnResult(std::move(r), true); });
  call->EndSubmit();
}

}  // namespace

void HandleGenerate(InferenceServer* server, const HttpHandlerOptions&, HttpRequest& request,
                    const RouteParams& params, std::shared_ptr<HttpResponder> responder) {
  Generate(server, request, params, std::move(responder), false);
}

void HandleGenerateStream(InferenceServer* server, const HttpHandlerOptions&, HttpRequest& request,
                          const RouteParams& params, std::shared_ptr<HttpResponder> responder) {
  Generate(server, request, params, std::move(responder), true);
}

}  // namespace nereid
