// The gRPC floor for bench/grpc_bench.py: a minimal async GRPCInferenceService on the same
// libgrpc++ and the same threading shape as Nereid's frontend (one completion queue, N threads)
// that answers ModelInfer by copying the inputs to the outputs. No model, no validation.
//
// Usage: grpc_echo_server <port> [threads] [absl-debug]; prints "listening on <port>" once
// serving. Like nereid it turns off abseil's deadlock detector (Debian's abseil is built without
// NDEBUG, so it is on by default); `absl-debug` leaves it on, to measure what it costs.
#include <absl/synchronization/mutex.h>
#include <grpcpp/grpcpp.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "grpc_service.grpc.pb.h"

namespace {

using inference::GRPCInferenceService;
using inference::ModelInferRequest;
using inference::ModelInferResponse;

class EchoCall {
 public:
  EchoCall(GRPCInferenceService::AsyncService* service, grpc::ServerCompletionQueue* cq)
      : service_(service), cq_(cq), responder_(&ctx_) {
    service_->RequestModelInfer(&ctx_, &request_, &responder_, cq_, cq_, this);
  }

  void Proceed(bool ok) {
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
    responder_.Finish(response_, grpc::Status::OK, this);
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
  std::printf("listening on %d\n", port);
  std::fflush(stdout);
  std::vector<std::thread> pool;
  for (int i = 0; i < threads; ++i) {
    pool.emplace_back([&cq] {
      void* tag = nullptr;
      bool ok = false;
      while (cq->Next(&tag, &ok)) static_cast<EchoCall*>(tag)->Proceed(ok);
    });
  }
  for (auto& t : pool) t.join();  // runs until killed
  return 0;
}
