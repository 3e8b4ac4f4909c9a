#include "frontends/http/infer_handler.h"

#include "common/logging.h"
#include "core/server/inference_server.h"
#include "core/stats/model_stats.h"
#include "frontends/http/binary_data_codec.h"
#include "frontends/http/compression.h"
#include "frontends/http/json_request_codec.h"
#include "frontends/http/json_response_codec.h"
#include "frontends/http/status_mapping.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

// The request body after Content-Encoding, under the same size limit as a plain body.
StatusOr<HttpRequestBody> DecodedBody(const HttpRequest& request, size_t max_input_size) {
  NEREID_ASSIGN_OR_RETURN(ContentCoding coding,
                          ParseContentEncoding(request.headers.Find("Content-Encoding")));
  if (coding == ContentCoding::kIdentity) return request.body;
  NEREID_ASSIGN_OR_RETURN(std::shared_ptr<std::string> inflated,
                          Decompress(coding, request.body.view(), max_input_size));
  return HttpRequestBody(std::shared_ptr<const std::string>(std::move(inflated)));
}

RawInputSpec RawSpecFromConfig(const std::string& model, const inference::ModelConfig& config) {
  RawInputSpec spec;
  spec.model_name = model;
  spec.input_count = config.input_size();
  spec.batching = config.max_batch_size() > 0;
  if (config.input_size() > 0) {
    const inference::ModelInput& in = config.input(0);
    spec.name = in.name();
    // DataType is numbered as inference.DataType (nereid/data_type.h).
    spec.data_type = static_cast<DataType>(in.data_type());
    spec.dims.assign(in.dims().begin(), in.dims().end());
  }
  return spec;
}

// Decodes against `model`, the version the request will run on (one lookup per request).
StatusOr<DecodedInferRequest> Decode(const ServedModel& model, const HttpRequest& request,
                                     const RouteParams& p, size_t max_input_size) {
  NEREID_ASSIGN_OR_RETURN(HttpRequestBody body, DecodedBody(request, max_input_size));
  size_t header_length = body.size();
  // Two lengths could be read differently by a proxy in front and by this server: refuse them.
  if (request.headers.Count(kInferHeaderContentLengthHeader) > 1) {
    return InvalidArgument("the " + std::string(kInferHeaderContentLengthHeader) +
                           " header must not be given more than once");
  }
  const std::string* header = request.headers.Find(kInferHeaderContentLengthHeader);
  if (header != nullptr) {
    NEREID_ASSIGN_OR_RETURN(header_length, ParseInferenceHeaderLength(*header, body.size()));
  }
  const inference::ModelConfig& config = model.config();
  if (config.model_transaction_policy().decoupled()) {
    return Unsupported("HTTP end point doesn't support models with decoupled transaction policy");
  }
  if (header == nullptr || header_length != 0) {
    return DecodeInferRequest(std::move(body), header_length, p.model, p.version);
  }
  NEREID_ASSIGN_OR_RETURN(
      ParsedInferHeader raw,
      DecodeRawInferRequest(std::move(body), RawSpecFromConfig(p.model, config)));
  raw.request->model_name = p.model;
  raw.request->model_version = p.version;
  return DecodedInferRequest{std::move(raw.request), raw.binary_output_default};
}

HttpResponse InferFailed(const std::string& id, const Status& status) {
  LOG_VERBOSE(1, "[request id: {}] Infer failed: {}", id.empty() ? "<id_unknown>" : id,
              status.message());
  return ErrorResponse(status);
}

// Kept alive by a traced reply's body, which lives until the reply is written: its release records
// HTTP_SEND_END.
std::shared_ptr<const void> SendEndMarker(std::shared_ptr<trace::Trace> trace) {
  return std::shared_ptr<const void>(nullptr, [trace = std::move(trace)](const void*) {
    trace->Capture("HTTP_SEND_END", NowNs());
  });
}

// Samples the request as Triton's HTTP frontend does, before the core sees it, and records when
// it was received (HTTP_RECV_START is the first read of the request when the server knows it).
void TraceReceive(InferenceServer& server, const HttpRequest& http, uint64_t recv_end_ns,
                  InferenceRequest* request) {
  request->trace = server.tracer().Sample(request->model_name);
  if (request->trace == nullptr) return;
  if (http.recv_start_ns != 0) request->trace->Capture("HTTP_RECV_START", http.recv_start_ns);
  request->trace->Capture("HTTP_RECV_END", recv_end_ns);
}

// The HTTP reply to one inference result (on the connection's I/O thread).
HttpResponse BuildReply(StatusOr<std::unique_ptr<InferenceResponse>>&& result,
                        ContentCoding reply_coding, bool binary_default, const std::string& id) {
  if (!result.ok()) return InferFailed(id, result.status());
  std::unique_ptr<InferenceResponse> response = std::move(*result);
  std::shared_ptr<trace::Trace> trace =
      response->request != nullptr ? response->request->trace : nullptr;
  if (trace != nullptr) trace->Capture("HTTP_SEND_START", NowNs());
  StatusOr<HttpResponse> http = EncodeInferResponse(std::move(response), binary_default);
  if (!http.ok()) return InferFailed(id, http.status());
  CompressResponse(reply_coding, &*http);
  if (trace != nullptr) http->body.KeepAlive(SendEndMarker(std::move(trace)));
  return std::move(*http);
}

// BuildReply for the inline path, with SendDeferred's answers to an exception: nothing may throw
// through the scheduler that called us.
HttpResponse BuildReplyGuarded(StatusOr<std::unique_ptr<InferenceResponse>>&& result,
                               ContentCoding reply_coding, bool binary_default,
                               const std::string& id) {
  try {
    return BuildReply(std::move(result), reply_coding, binary_default, id);
  } catch (const std::exception& e) {
    return ErrorResponse(500, e.what());
  } catch (...) {
    return ErrorResponse(500, "building the reply failed");
  }
}

// The HTTP part of a request's completion: it rides inline in the core's completion object
// (request_completion.h), so answering costs no closure of its own.
struct InferReply {
  std::shared_ptr<HttpResponder> responder;
  std::string id;
  ContentCoding coding;
  bool binary_default;

  void operator()(StatusOr<std::unique_ptr<InferenceResponse>> result) {
    // Ran inline on the connection's own I/O thread: the deferred builder would run right here,
    // so build and send at once, without wrapping the result for a hand-off.
    if (responder->OnReplyThread()) {
      return responder->Send(BuildReplyGuarded(std::move(result), coding, binary_default, id));
    }
    // Runs on an executor thread (or here, for early errors): hand the result to the connection's
    // I/O thread and serialize it there (the maker holds it inline: no allocation of its own).
    responder->SendDeferred([result = std::move(result), coding = coding,
                             binary_default = binary_default,
                             id = std::move(id)]() mutable -> HttpResponse {
      return BuildReply(std::move(result), coding, binary_default, id);
    });
  }
};
static_assert(sizeof(InferReply) <= InferCallback::kInlineBytes);

}  // namespace

void HandleInfer(InferenceServer* server, const HttpHandlerOptions& options, HttpRequest& request,
                 const RouteParams& params, std::shared_ptr<HttpResponder> responder) {
  // The trace extension, only while it is on somewhere: the body has been read by now.
  const uint64_t recv_end_ns = server->tracer().MaybeEnabled() ? NowNs() : 0;
  if (auto coding = ParseContentEncoding(request.headers.Find("Content-Encoding")); !coding.ok()) {
    // Triton answers 415 Unsupported Media Type here, outside its usual status mapping.
    HttpResponse r = InferFailed("", coding.status());
    r.status = 415;
    r.headers.Add("Accept-Encoding", "gzip, deflate");
    return responder->Send(std::move(r));
  }
  StatusOr<ServedModel> model = server->AcquireModel(params.model, params.version);
  if (!model.ok()) return responder->Send(InferFailed("", model.status()));
  StatusOr<DecodedInferRequest> decoded = Decode(*model, request, params, options.max_input_size);
  if (!decoded.ok()) return responder->Send(InferFailed("", decoded.status()));
  if (recv_end_ns != 0) TraceReceive(*server, request, recv_end_ns, decoded->request.get());
  const ContentCoding reply_coding = ChooseResponseCoding(request.headers.Find("Accept-Encoding"));
  const bool binary_default = decoded->binary_output_default;
  std::string id = decoded->request->id;
  decoded->request->cancel_token = request.cancel_token;
  // Run the model on this I/O thread when an instance is idle and a slot is free: no hand-off to
  // an executor and back. At least one I/O thread always stays out of it (see inline_slots).
  InferOptions infer_options;
  infer_options.trace_sampled = recv_end_ns != 0;
  std::atomic<int>* slots = options.inline_slots.get();
  if (slots != nullptr && slots->fetch_sub(1, std::memory_order_acq_rel) > 0) {
    infer_options.allow_inline = true;
  } else if (slots != nullptr) {
    slots->fetch_add(1, std::memory_order_acq_rel);
    slots = nullptr;
  }
  server->InferAsync(std::move(*model), std::move(decoded->request),
                     InferReply{std::move(responder), std::move(id), reply_coding, binary_default},
                     infer_options);
  if (slots != nullptr) slots->fetch_add(1, std::memory_order_acq_rel);
}

}  // namespace nereid
