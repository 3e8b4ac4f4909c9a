#include "perf_grpc.h"

#include <grpcpp/grpcpp.h>

#include "grpc_service.grpc.pb.h"

namespace nereid::perf {
namespace {

using inference::GRPCInferenceService;

Status FromGrpc(const grpc::Status& s, const std::string& what) {
  return Unavailable(what + " failed: " + s.error_message());
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
  auto stub = GRPCInferenceService::NewStub(channels_[0]);
  inference::ModelMetadataRequest req;
  req.set_name(model);
  req.set_version(version);
  inference::ModelMetadataResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub->ModelMetadata(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "ModelMetadata");
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
  auto stub = GRPCInferenceService::NewStub(channels_[0]);
  inference::ModelStatisticsRequest req;
  req.set_name(model);
  req.set_version(version);
  inference::ModelStatisticsResponse resp;
  grpc::ClientContext ctx;
  grpc::Status s = stub->ModelStatistics(&ctx, req, &resp);
  if (!s.ok()) return FromGrpc(s, "ModelStatistics");
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
                       bool streaming)
    : client_(client),
      request_(std::make_unique<inference::ModelInferRequest>()),
      streaming_(streaming) {
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

void GrpcDriver::Start(int concurrency, Recorder* recorder) {
  stop_ = false;
  for (int i = 0; i < concurrency; ++i) {
    auto slot = static_cast<size_t>(i);
    workers_.emplace_back([this, slot, recorder] {
      if (streaming_)
        Stream(slot, recorder);
      else
        Unary(slot, recorder);
    });
  }
}

void GrpcDriver::Stop() {
  stop_ = true;
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void GrpcDriver::Unary(size_t slot, Recorder* recorder) {
  auto stub = GRPCInferenceService::NewStub(client_->channel(slot));
  inference::ModelInferResponse resp;
  while (!stop_) {
    grpc::ClientContext ctx;
    uint64_t start = NowNs();
    grpc::Status s = stub->ModelInfer(&ctx, *request_, &resp);
    if (s.ok())
      recorder->Success(NowNs() - start);
    else
      recorder->Error();
  }
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
