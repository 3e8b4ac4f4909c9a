// Tests the runner's contract with a backend: reshape in both directions, output selection and
// ordering, and the errors for outputs a backend gets wrong. The backend here is a small test
// instance that doubles FP32 inputs; real backends are covered by their own and e2e tests.
#include "core/model/instance_runner.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

namespace nereid {
namespace {

ExecutionTimes times_;  // what the last RunOnInstance recorded

class DoublingInstance : public backend::ModelInstance {
 public:
  std::vector<std::string> produce = {"OUT_A", "OUT_B"};
  DataType out_type = DataType::kFp32;
  size_t out_bytes = 0;  // 0: the input's size
  Shape seen_shape;

  Status Execute(const backend::ExecuteArgs& args) override {
    const backend::TensorRef& in = args.inputs[0];
    seen_shape.assign(in.shape.begin(), in.shape.end());
    for (const auto& name : produce) {
      if (!args.outputs->IsRequested(name)) continue;
      auto buf = args.outputs->Allocate(name, out_type, in.shape,
                                        out_bytes > 0 ? out_bytes : in.data.size());
      if (!buf.ok()) return buf.status();
      const float* src = reinterpret_cast<const float*>(in.data.data());
      float* dst = reinterpret_cast<float*>(buf->data());
      for (size_t i = 0; i < in.data.size() / 4; ++i) dst[i] = 2 * src[i];
    }
    return Status::Ok();
  }
};

ModelInfo Model(bool reshape) {
  ModelInfo m;
  m.name = "m";
  m.version = 3;
  m.max_batch_size = 4;
  TensorSpec in{"IN", DataType::kFp32, {2, 2}};
  TensorSpec a{"OUT_A", DataType::kFp32, {2, 2}};
  if (reshape) {
    in.has_reshape = a.has_reshape = true;
    in.reshape = a.reshape = {4};
  }
  m.inputs = {in};
  m.outputs = {a, {"OUT_B", DataType::kFp32, {-1, 2}}};
  return m;
}

std::unique_ptr<InferenceRequest> Request(const std::vector<float>& values, Shape shape) {
  auto r = std::make_unique<InferenceRequest>();
  auto buf = std::make_shared<std::vector<float>>(values);
  InferInput in;
  in.name = "IN";
  in.data_type = DataType::kFp32;
  in.shape = std::move(shape);
  in.data = std::span<const char>(reinterpret_cast<const char*>(buf->data()), buf->size() * 4);
  r->inputs.push_back(in);
  r->KeepAlive(buf);
  return r;
}

TEST(InstanceRunnerTest, AllOutputsInConfigOrder) {
  DoublingInstance inst;
  auto resp = RunOnInstance(inst, Model(false), Request({1, 2, 3, 4}, {1, 2, 2}), 1, &times_);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  ASSERT_EQ((*resp)->outputs.size(), 2u);
  EXPECT_EQ((*resp)->outputs[0].name, "OUT_A");
  EXPECT_EQ((*resp)->outputs[1].name, "OUT_B");
  EXPECT_EQ((*resp)->model_version, 3);
  float v[4];
  std::memcpy(v, (*resp)->outputs[0].data.data(), 16);
  EXPECT_EQ(v[3], 8.0f);
  EXPECT_NE((*resp)->request, nullptr);
}

TEST(InstanceRunnerTest, RequestedOutputsInRequestOrder) {
  DoublingInstance inst;
  auto req = Request({1, 2, 3, 4}, {1, 2, 2});
  req->outputs = {{"OUT_B", {}}};
  auto resp = RunOnInstance(inst, Model(false), std::move(req), 1, &times_);
  ASSERT_TRUE(resp.ok());
  ASSERT_EQ((*resp)->outputs.size(), 1u);
  EXPECT_EQ((*resp)->outputs[0].name, "OUT_B");
}

TEST(InstanceRunnerTest, ReshapeBothWays) {
  DoublingInstance inst;
  inst.produce = {"OUT_A"};
  auto req = Request({1, 2, 3, 4, 5, 6, 7, 8}, {2, 2, 2});
  req->outputs = {{"OUT_A", {}}};
  auto resp = RunOnInstance(inst, Model(true), std::move(req), 2, &times_);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(inst.seen_shape, (Shape{2, 4}));
  EXPECT_EQ((*resp)->outputs[0].shape, (Shape{2, 2, 2}));
}

TEST(InstanceRunnerTest, SharedMemoryOutputIsAllocatedInTheRegion) {
  DoublingInstance inst;
  std::vector<char> region(32, 0);
  auto req = Request({1, 2, 3, 4}, {1, 2, 2});
  req->outputs = {{"OUT_A", {}, std::span<char>(region.data() + 8, 24)}, {"OUT_B", {}}};
  auto resp = RunOnInstance(inst, Model(false), std::move(req), 1, &times_);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_TRUE((*resp)->outputs[0].in_shared_memory);
  EXPECT_TRUE((*resp)->outputs[0].data.empty());
  EXPECT_EQ((*resp)->outputs[0].shape, (Shape{1, 2, 2}));
  float v[4];
  std::memcpy(v, region.data() + 8, 16);
  EXPECT_EQ(v[0], 2.0f);
  EXPECT_EQ(v[3], 8.0f);
  EXPECT_FALSE((*resp)->outputs[1].in_shared_memory);
  EXPECT_EQ((*resp)->outputs[1].data.size(), 16u);
}

TEST(InstanceRunnerTest, SharedMemoryOutputRegionTooSmall) {
  DoublingInstance inst;
  std::vector<char> region(8, 0);
  auto req = Request({1, 2, 3, 4}, {1, 2, 2});
  req->outputs = {{"OUT_A", {}, std::span<char>(region)}};
  auto resp = RunOnInstance(inst, Model(false), std::move(req), 1, &times_);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), StatusCode::kInternal);
  EXPECT_EQ(resp.status().message(),
            "shared memory size specified with the request for output 'OUT_A' (8 bytes) should be "
            "at least 16 bytes to hold the results");
  EXPECT_EQ(region, std::vector<char>(8, 0));
}

TEST(InstanceRunnerTest, MissingOutputIsInternalError) {
  DoublingInstance inst;
  inst.produce = {"OUT_A"};
  auto resp = RunOnInstance(inst, Model(false), Request({1, 2, 3, 4}, {1, 2, 2}), 1, &times_);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), StatusCode::kInternal);
  EXPECT_NE(resp.status().message().find("did not produce output 'OUT_B'"), std::string::npos);
}

TEST(InstanceRunnerTest, WrongOutputTypeIsRejected) {
  DoublingInstance inst;
  inst.out_type = DataType::kInt32;
  auto resp = RunOnInstance(inst, Model(false), Request({1, 2, 3, 4}, {1, 2, 2}), 1, &times_);
  ASSERT_FALSE(resp.ok());
  EXPECT_NE(resp.status().message().find("configuration says FP32"), std::string::npos);
}

TEST(InstanceRunnerTest, OutputTooLargeToAllocateIsAnErrorNotAnException) {
  // A model whose output size follows its input values could ask for more than the process can
  // hold; std::string would throw through the backend plugin.
  DoublingInstance inst;
  inst.out_bytes = std::numeric_limits<size_t>::max() / 2;
  auto resp = RunOnInstance(inst, Model(false), Request({1, 2, 3, 4}, {1, 2, 2}), 1, &times_);
  ASSERT_FALSE(resp.ok());
  EXPECT_EQ(resp.status().code(), StatusCode::kInternal);
  EXPECT_NE(resp.status().message().find("more than can be allocated"), std::string::npos)
      << resp.status().message();
}

TEST(InstanceRunnerTest, PhasesAreOrderedWithoutBackendTimes) {
  DoublingInstance inst;
  auto resp = RunOnInstance(inst, Model(false), Request({1, 2, 3, 4}, {1, 2, 2}), 1, &times_);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_GT(times_.compute_start, 0u);
  EXPECT_LE(times_.compute_start, times_.input_end);
  EXPECT_LE(times_.input_end, times_.output_start);
  EXPECT_LE(times_.output_start, times_.compute_end);
}

// A backend that reports its own input/output boundaries has them used as they are.
class TimedInstance : public DoublingInstance {
 public:
  Status Execute(const backend::ExecuteArgs& args) override {
    if (args.times == nullptr) return Internal("no times");
    args.times->input_end_ns = backend::ExecuteClockNs();
    reported_input_end = args.times->input_end_ns;
    Status s = DoublingInstance::Execute(args);
    args.times->output_start_ns = backend::ExecuteClockNs();
    reported_output_start = args.times->output_start_ns;
    return s;
  }
  uint64_t reported_input_end = 0;
  uint64_t reported_output_start = 0;
};

TEST(InstanceRunnerTest, BackendReportedPhasesAreUsed) {
  TimedInstance inst;
  auto resp = RunOnInstance(inst, Model(false), Request({1, 2, 3, 4}, {1, 2, 2}), 1, &times_);
  ASSERT_TRUE(resp.ok()) << resp.status().message();
  EXPECT_EQ(times_.input_end, inst.reported_input_end);
  EXPECT_EQ(times_.output_start, inst.reported_output_start);
  EXPECT_LE(times_.output_start, times_.compute_end);
}

}  // namespace
}  // namespace nereid
