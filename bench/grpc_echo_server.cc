// The gRPC floor for bench/grpc_bench.py: a minimal async GRPCInferenceService on the same
// libgrpc++ and the same threading shape as Nereid's frontend (one completion queue, N threads)
// that answers ModelInfer by copying the inputs to the outputs. No model, no validation.
// ModelMetadata describes every model as identity_fp32 does (INPUT0 -> OUTPUT0, FP32 [-1,-1]) and
// ModelStatistics answers with no model, so bench/nereid_perf can drive it too (bench/issue21.py's
// gRPC overload floor).
//
// Usage: grpc_echo_server <port> [threads] [absl-debug]; prints "listening on <port>" once
// serving. Like nereid it turns off abseil's deadlock detector (Debian's abseil is built without
// NDEBUG, so it is on by default); `absl-debug` leaves it on, to measure what it costs.
#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace {

using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

class Call {
 public:
  virtual ~Call() = default;
  virtual void Proceed(bool ok) = 0;
};

class EchoCall : public Call {
 public:
  EchoCall(GRPCInferenceService::AsyncService* service, grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq), responder_(&ctx_) {
    service_->RequestModelInfer(&ctx_, &request_, &responder_, cq_, cq_, static_cast<Call*>(this));
  }

  void Proceed(bool ok) override {
    if (done_ || !ok) {
      delete this;
      return;
    }
    new EchoCall(service_, cq_);
    response_.set_model_name(request_.model_name());
    response_.set_model_version("1");
    response_.set_id(request_.id());
    for (int i = 0; i < request_.inputs_size(); ++i) {
      const auto& in = request_.inputs(i);
      auto* out = response_.add_outputs();
      out->set_name("OUTPUT" + std::to_string(i));
      out->set_datatype(in.datatype());
      *out->mutable_shape() = in.shape();
      if (i < request_.raw_input_contents_size()) {
        response_.add_raw_output_contents(request_.raw_input_contents(i));
      }
    }
    done_ = true;
    responder_.Finish(response_, grpc::Status::OK, static_cast<Call*>(this));
  }

 private:
  GRPCInferenceService::AsyncService* service_;
  grpc::ServerCompletionQueue* cq_;
  grpc::ServerContext ctx_;
  ModelInferRequest request_;
  ModelInferResponse response_;
  grpc::ServerAsyncResponseWriter<ModelInferResponse> responder_;
  bool done_ = false;
};

// A unary call answered by `fill` from its request alone (metadata, statistics).
template <typename Request, typename Response>
class FixedCall : public Call {
 public:
  using Writer = grpc::ServerAsyncResponseWriter<Response>;
  using Asker = std::function<void(grpc::ServerContext*, Request*, Writer*, Call*)>;
  using Filler = void (*)(const Request&, Response*);

  FixedCall(Asker ask, Filler fill) : ask_(std::move(ask)), fill_(fill), responder_(&ctx_) {
    ask_(&ctx_, &request_, &responder_, this);
  }

  void Proceed(bool ok) override {
    if (done_ || !ok) {
      delete this;
      return;
    }
    new FixedCall(ask_, fill_);
    fill_(request_, &response_);
    done_ = true;
    responder_.Finish(response_, grpc::Status::OK, static_cast<Call*>(this));
  }

 private:
  Asker ask_;
  Filler fill_;
  grpc::ServerContext ctx_;
  Request request_;
  Response response_;
  Writer responder_;
  bool done_ = false;
};

void FillMetadata(const inference::ModelMetadataRequest& request,
                  inference::ModelMetadataResponse* response) {
  response->set_name(request.name());
  response->add_versions("1");
  response->set_platform("echo");
  auto describe = [](inference::ModelMetadataResponse::TensorMetadata* t, const char* name) {
    t->set_name(name);
    t->set_datatype("FP32");
    t->add_shape(-1);
    t->add_shape(-1);
  };
  describe(response->add_inputs(), "INPUT0");
  describe(response->add_outputs(), "OUTPUT0");
}

void FillStatistics(const inference::ModelStatisticsRequest&, inference::ModelStatisticsResponse*) {
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s <port> [threads] [absl-debug]\n", argv[0]);
    return 2;
  }
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  if (argc <= 3 || std::string(argv[3]) != "absl-debug") {
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  }
  GRPCInferenceService::AsyncService service;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(std::string("127.0.0.1:") + argv[1], grpc::InsecureServerCredentials(),
                           &port);
  builder.RegisterService(&service);
  builder.SetMaxReceiveMessageSize(INT_MAX);
  builder.SetMaxSendMessageSize(INT_MAX);
  auto cq = builder.AddCompletionQueue();
  auto server = builder.BuildAndStart();
  if (!server || port == 0) return 1;
  new EchoCall(&service, cq.get());
  grpc::ServerCompletionQueue* q = cq.get();
  new FixedCall<inference::ModelMetadataRequest, inference::ModelMetadataResponse>(
      [&service, q](auto* ctx, auto* req, auto* writer, Call* tag) {
        service.RequestModelMetadata(ctx, req, writer, q, q, tag);
      },
      FillMetadata);
  new FixedCall<inference::ModelStatisticsRequest, inference::ModelStatisticsResponse>(
      [&service, q](auto* ctx, auto* req, auto* writer, Call* tag) {
        service.RequestModelStatistics(ctx, req, writer, q, q, tag);
      },
      FillStatistics);
  std::printf("listening on %d\n", port);
  std::fflush(stdout);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&cq] {
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok)) static_cast<Call*>(tag)->Proceed(ok);
    });
  }
  for (auto& t : pool) t.join();  // runs until killed
  return 0;
}
