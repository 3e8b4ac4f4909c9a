#include "perf_grpc.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>

#include "grpc_service.grpc.pb.h"

namespace nereid::perf {
namespace {

using inference::GRPCInferenceService;

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  return Unavailable(what + " failed: " + s.error_message());
}

// One blocking call of a {name, version} request (ModelMetadata, ModelStatistics).
template <typename Request, typename Response>
Status CallForModel(const std::shared_ptr<grpc::Channel>& channel,
                    grpc::Status (GRPCInferenceService::Stub::*method)(grpc::ClientContext*,
                                                                       const Request&, Response*),
                    const std::string& what, const std::string& model, const std::string& version,
                    Response* response) {
  auto stub = GRPCInferenceService::NewStub(channel);
  Request request;
  request.set_name(model);
  request.set_version(version);
  grpc::ClientContext ctx;
  grpc::Status s = (stub.get()->*method)(&ctx, request, response);
  return s.ok() ? Status::Ok() : FromGrpc(s, what);
}

void AddPhase(PhaseStat& into, const inference::StatisticDuration& d) {
  into.count += d.count();
  into.ns += d.ns();
}

}  // namespace

GrpcClient::GrpcClient(const std::string& target, int channels) {
  for (int i = 0; i < channels; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("grpc.channel_id", i);  // distinct arguments: distinct connections
    args.SetMaxReceiveMessageSize(-1);
    args.SetMaxSendMessageSize(-1);
    channels_.push_back(
        grpc::CreateCustomChannel(target, grpc::InsecureChannelCredentials(), args));
  }
}

GrpcClient::~GrpcClient() = default;

StatusOr<ModelMetadata> GrpcClient::Metadata(const std::string& model, const std::string& version) {
  inference::ModelMetadataResponse resp;
  NEREID_RETURN_IF_ERROR(CallForModel(channels_[0], &GRPCInferenceService::Stub::ModelMetadata,
                                      "ModelMetadata", model, version, &resp));
  ModelMetadata md;
  for (const auto& t : resp.inputs()) {
    md.inputs.push_back({t.name(), t.datatype(), {t.shape().begin(), t.shape().end()}});
  }
  for (const auto& t : resp.outputs()) {
    md.outputs.push_back({t.name(), t.datatype(), {t.shape().begin(), t.shape().end()}});
  }
  if (md.inputs.empty()) return InvalidArgument("model metadata lists no inputs");
  return md;
}

StatusOr<ServerStats> GrpcClient::Stats(const std::string& model, const std::string& version) {
  inference::ModelStatisticsResponse resp;
  NEREID_RETURN_IF_ERROR(CallForModel(channels_[0], &GRPCInferenceService::Stub::ModelStatistics,
                                      "ModelStatistics", model, version, &resp));
  ServerStats out;
  for (const auto& m : resp.model_stats()) {
    out.inference_count += m.inference_count();
    out.execution_count += m.execution_count();
    const auto& st = m.inference_stats();
    AddPhase(out.success, st.success());
    AddPhase(out.fail, st.fail());
    AddPhase(out.queue, st.queue());
    AddPhase(out.compute_input, st.compute_input());
    AddPhase(out.compute_infer, st.compute_infer());
    AddPhase(out.compute_output, st.compute_output());
  }
  return out;
}

GrpcDriver::GrpcDriver(const GrpcClient* client, const std::string& model,
                       const std::string& version, const std::vector<InputTensor>& inputs,
                       bool streaming, int loops)
    : client_(client),
      request_(std::make_unique<inference::ModelInferRequest>()),
      streaming_(streaming),
      loops_(loops) {
  request_->set_model_name(model);
  request_->set_model_version(version);
  for (const InputTensor& t : inputs) {
    auto* in = request_->add_inputs();
    in->set_name(t.name);
    in->set_datatype(t.datatype);
    for (int64_t d : t.shape) in->add_shape(d);
    request_->add_raw_input_contents(t.raw);
  }
}

GrpcDriver::~GrpcDriver() { Stop(); }

void GrpcDriver::Start(int concurrency, double rate, Recorder* recorder) {
  stop_ = false;
  if (streaming_) {
    for (int i = 0; i < concurrency; ++i) {
      auto slot = static_cast<size_t>(i);
      workers_.emplace_back([this, slot, recorder] { Stream(slot, recorder); });
    }
    return;
  }
  int loops = std::min(loops_, concurrency);
  size_t slot = 0;
  for (int t = 0; t < loops; ++t) {
    int calls = concurrency / loops + (t < concurrency % loops ? 1 : 0);
    double loop_rate = rate * calls / concurrency;
    workers_.emplace_back(
        [this, slot, calls, loop_rate, recorder] { UnaryLoop(slot, calls, loop_rate, recorder); });
    slot += static_cast<size_t>(calls);
  }
}

void GrpcDriver::Stop() {
  stop_ = true;
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

namespace {

// One outstanding asynchronous ModelInfer (a ClientContext serves one call only).
struct AsyncCall {
  grpc::ClientContext ctx;
  inference::ModelInferResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<inference::ModelInferResponse>> reader;
  uint64_t start_ns = 0;
  size_t slot = 0;
};

}  // namespace

void GrpcDriver::UnaryLoop(size_t first_slot, int calls, double rate, Recorder* recorder) {
  grpc::CompletionQueue cq;
  std::vector<std::unique_ptr<GRPCInferenceService::Stub>> stubs;
  for (int i = 0; i < calls; ++i) {
    stubs.push_back(GRPCInferenceService::NewStub(client_->channel(first_slot + i)));
  }
  auto issue = [&](size_t i) {
    auto* call = new AsyncCall;
    call->slot = i;
    call->start_ns = NowNs();
    call->reader = stubs[i]->AsyncModelInfer(&call->ctx, *request_, &cq);
    call->reader->Finish(&call->response, &call->status, call);
  };
  Pacer pacer(rate, NowNs());
  std::vector<size_t> idle;  // paced mode: slots waiting for their next start time
  int outstanding = 0;
  for (int i = 0; i < calls; ++i) {
    if (pacer.paced()) {
      idle.push_back(static_cast<size_t>(i));
    } else {
      issue(static_cast<size_t>(i));
      ++outstanding;
    }
  }
  void* tag = nullptr;
  bool ok = false;
  while (true) {
    while (pacer.paced() && !stop_ && !idle.empty() && NowNs() >= pacer.Due()) {
      size_t i = idle.back();
      idle.pop_back();
      pacer.Sent();
      issue(i);
      ++outstanding;
    }
    if (stop_ && outstanding == 0) break;
    uint64_t wait_ns = 100'000'000;
    if (pacer.paced() && !stop_ && !idle.empty()) {
      uint64_t now = NowNs();
      wait_ns = pacer.Due() > now ? pacer.Due() - now : 0;
    }
    auto deadline = std::chrono::system_clock::now() + std::chrono::nanoseconds(wait_ns);
    auto got = cq.AsyncNext(&tag, &ok, deadline);
    if (got == grpc::CompletionQueue::TIMEOUT) continue;
    if (got == grpc::CompletionQueue::SHUTDOWN) break;
    std::unique_ptr<AsyncCall> call(static_cast<AsyncCall*>(tag));
    --outstanding;
    if (ok && call->status.ok())
      recorder->Success(NowNs() - call->start_ns);
    else
      recorder->Error();
    if (stop_) continue;
    if (pacer.paced()) {
      idle.push_back(call->slot);
    } else {
      issue(call->slot);
      ++outstanding;
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) delete static_cast<AsyncCall*>(tag);
}

void GrpcDriver::Stream(size_t slot, Recorder* recorder) {
  auto stub = GRPCInferenceService::NewStub(client_->channel(slot));
  while (!stop_) {
    grpc::ClientContext ctx;
    auto stream = stub->ModelStreamInfer(&ctx);
    inference::ModelStreamInferResponse resp;
    bool broken = false;
    while (!stop_ && !broken) {
      uint64_t start = NowNs();
      if (!stream->Write(*request_) || !stream->Read(&resp)) {
        recorder->Error();
        broken = true;
      } else if (!resp.error_message().empty()) {
        recorder->Error();
      } else {
        recorder->Success(NowNs() - start);
      }
    }
    stream->WritesDone();
    while (stream->Read(&resp)) {
    }
    grpc::Status s = stream->Finish();
    (void)s;  // the stream's end status: errors were counted per request
  }
}

}  // namespace nereid::perf
