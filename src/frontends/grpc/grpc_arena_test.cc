#include "frontends/grpc/grpc_arena.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "frontends/grpc/grpc_codec.h"
#include "frontends/grpc/grpc_test_messages.h"
#include "grpc_service.pb.h"

namespace nereid {
namespace {

using inference::ModelInferRequest;
using inference::ModelInferResponse;
using inference::ModelStreamInferResponse;

std::string BenchRequestBytes() { return testing_grpc::BenchRequest().SerializeAsString(); }

// The reply to it, as the identity model's response is encoded.
InferenceResponse BenchResponse(std::string data) {
  InferenceResponse r;
  r.model_name = "identity_fp32";
  r.model_version = 1;
  InferOutput out;
  out.name = "OUTPUT0";
  out.data_type = DataType::kFp32;
  out.shape = {1, 16};
  out.data = std::move(data);
  r.outputs.push_back(std::move(out));
  return r;
}

TEST(GrpcArenaTest, ARequestOfTheUsualShapeFitsTheFirstBlock) {
  std::shared_ptr<ModelInferRequest> m = NewModelInferRequest();
  ASSERT_NE(m->GetArena(), nullptr);
  ASSERT_TRUE(m->ParseFromString(BenchRequestBytes()));
  EXPECT_EQ(m->inputs(0).name(), "INPUT0");
  EXPECT_EQ(m->inputs(0).shape_size(), 2);
  EXPECT_LE(m->GetArena()->SpaceAllocated(), kRequestArenaBlockBytes);
  // The measure sees growth: the same request does not fit 64 bytes.
  ArenaMessage<ModelInferRequest, 64> small;
  ASSERT_TRUE(small->ParseFromString(BenchRequestBytes()));
  EXPECT_GT(small->GetArena()->SpaceAllocated(), 64u);
}

TEST(GrpcArenaTest, TheSharedRequestAndItsArenaFitGlibcsThreadCache) {
  // make_shared's control block and the holder together: glibc's tcache serves up to 1,032 bytes.
  EXPECT_LE(sizeof(ArenaMessage<ModelInferRequest, kRequestArenaBlockBytes>) + 16, 1032u);
}

TEST(GrpcArenaTest, ADecodedRequestKeepsTheArenaAliveForItsInputViews) {
  std::shared_ptr<ModelInferRequest> m = NewModelInferRequest();
  ASSERT_TRUE(m->ParseFromString(BenchRequestBytes()));
  auto request = DecodeModelInferRequest(std::move(m));
  ASSERT_TRUE(request.ok()) << request.status().message();
  m.reset();
  ASSERT_EQ((*request)->inputs.size(), 1u);
  const InferInput& in = (*request)->inputs[0];
  EXPECT_EQ(in.name, "INPUT0");
  ASSERT_EQ(in.data.size(), 64u);
  EXPECT_EQ(std::string(in.data.data(), in.data.size()),
            testing_grpc::BenchRequest().raw_input_contents(0));
}

TEST(GrpcArenaTest, AnEncodedReplyOnTheArenaTakesTheOutputBytesWithoutACopy) {
  std::string data(4096, 'x');
  const char* bytes = data.data();
  InferenceResponse response = BenchResponse(std::move(data));
  ArenaMessage<ModelInferResponse, kResponseArenaBlockBytes> out;
  EncodeModelInferResponse(response, out.get());
  ASSERT_EQ(out->raw_output_contents_size(), 1);
  EXPECT_EQ(out->raw_output_contents(0).data(), bytes);  // moved, not copied
  EXPECT_EQ(out->raw_output_contents(0).size(), 4096u);
  EXPECT_EQ(out->outputs(0).name(), "OUTPUT0");
  EXPECT_EQ(out->outputs(0).datatype(), "FP32");
  EXPECT_EQ(out->model_version(), "1");
  // The reply serializes as a heap message with the same fields does.
  ModelInferResponse parsed;
  ASSERT_TRUE(parsed.ParseFromString(out->SerializeAsString()));
  EXPECT_EQ(parsed.raw_output_contents(0), std::string(4096, 'x'));
}

TEST(GrpcArenaTest, RepliesOfTheUsualShapeFitTheFirstBlock) {
  ArenaMessage<ModelInferResponse, kResponseArenaBlockBytes> unary;
  InferenceResponse r1 = BenchResponse(std::string(64, 'y'));
  EncodeModelInferResponse(r1, unary.get());
  EXPECT_LE(unary->GetArena()->SpaceAllocated(), kResponseArenaBlockBytes);
  ArenaMessage<ModelStreamInferResponse, kResponseArenaBlockBytes> stream;
  InferenceResponse r2 = BenchResponse(std::string(64, 'y'));
  EncodeModelInferResponse(r2, stream->mutable_infer_response());
  (*stream->mutable_infer_response()->mutable_parameters())["triton_final_response"].set_bool_param(
      true);
  EXPECT_LE(stream->GetArena()->SpaceAllocated(), kResponseArenaBlockBytes);
}

TEST(GrpcArenaTest, AReplyBuiltOnAnotherThreadUsesTheFirstBlockOnlyWhenMadeThere) {
  // An arena made on this thread and filled on another: the other thread gets a heap block.
  ArenaMessage<ModelInferResponse, kResponseArenaBlockBytes> eager;
  std::thread([&eager] {
    InferenceResponse r = BenchResponse(std::string(64, 'y'));
    EncodeModelInferResponse(r, eager.get());
  }).join();
  EXPECT_GT(eager->GetArena()->SpaceAllocated(), kResponseArenaBlockBytes);
  // Made by the thread that fills it (an executor finishing a call): the first block suffices.
  LazyArenaMessage<ModelInferResponse, kResponseArenaBlockBytes> lazy;
  std::thread([&lazy] {
    InferenceResponse r = BenchResponse(std::string(64, 'y'));
    EncodeModelInferResponse(r, lazy.get());
  }).join();
  EXPECT_LE(lazy->GetArena()->SpaceAllocated(), kResponseArenaBlockBytes);
  EXPECT_EQ(lazy->outputs(0).name(), "OUTPUT0");
  EXPECT_EQ(lazy->raw_output_contents(0), std::string(64, 'y'));
}

}  // namespace
}  // namespace nereid
