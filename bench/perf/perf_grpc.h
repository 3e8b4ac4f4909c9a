// gRPC for nereid_perf: model metadata and statistics through the GRPCInferenceService, and the
// load driver: unary ModelInfer as asynchronous calls on completion queues (`loops` threads share
// the outstanding calls, so c=1024 needs no 1024 client threads), ModelStreamInfer as one
// stream and one worker thread per outstanding request.
#ifndef NEREID_BENCH_PERF_PERF_GRPC_H_
#define NEREID_BENCH_PERF_PERF_GRPC_H_

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "nereid/status.h"
#include "perf_json.h"
#include "perf_load.h"
#include "perf_request.h"

namespace grpc {
class Channel;
}
namespace inference {
class ModelInferRequest;
}

namespace nereid::perf {

class GrpcClient {
 public:
  GrpcClient(const std::string& target, int channels);
  ~GrpcClient();
  StatusOr<ModelMetadata> Metadata(const std::string& model, const std::string& version);
  StatusOr<ServerStats> Stats(const std::string& model, const std::string& version);
  const std::shared_ptr<grpc::Channel>& channel(size_t i) const {
    return channels_[i % channels_.size()];
  }

 private:
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
};

class GrpcDriver : public LoadDriver {
 public:
  GrpcDriver(const GrpcClient* client, const std::string& model, const std::string& version,
             const std::vector<InputTensor>& inputs, bool streaming, int loops);
  ~GrpcDriver() override;
  void Start(int concurrency, double rate, Recorder* recorder) override;
  void Stop() override;

 private:
  void UnaryLoop(size_t first_slot, int calls, double rate, Recorder* recorder);
  void Stream(size_t slot, Recorder* recorder);

  const GrpcClient* client_;
  std::unique_ptr<inference::ModelInferRequest> request_;
  bool streaming_;
  int loops_;
  std::atomic<bool> stop_{false};
  std::vector<std::thread> workers_;
};

}  // namespace nereid::perf

#endif  // NEREID_BENCH_PERF_PERF_GRPC_H_
