// Ragged batching through RunBatchOnInstance: requests whose ragged input shapes differ share one
// execution, get batch inputs, and receive their part of a scattered batch output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/scheduler/batch_runner.h"

namespace nereid {
namespace {

using ::testing::ElementsAre;

// IN arrives flat [N] with INDEX = the accumulated element counts per request; writes SUM [R,1]
// (each request's sum) and OUT = 2 * IN, flat (scattered back with each request's IN shape).
class RaggedInstance : public backend::ModelInstance {
 public:
  int executions = 0;
  std::vector<int64_t> in_shape;
  bool short_out = false;  // OUT one element short: does not match the requests' shapes

  Status Execute(const backend::ExecuteArgs& args) override {
    ++executions;
    const backend::TensorRef* in = nullptr;
    const backend::TensorRef* index = nullptr;
    for (const auto& t : args.inputs) {
      if (t.name == "IN") in = &t;
      if (t.name == "INDEX") index = &t;
    }
    if (in == nullptr || index == nullptr) return InvalidArgument("missing input");
    in_shape.assign(in->shape.begin(), in->shape.end());
    const float* x = reinterpret_cast<const float*>(in->data.data());
    const int32_t* ends = reinterpret_cast<const int32_t*>(index->data.data());
    const int64_t requests = index->shape[0];
    const int64_t sum_shape[] = {requests, 1};
    NEREID_ASSIGN_OR_RETURN(
        auto sums, args.outputs->Allocate("SUM", DataType::kFp32, sum_shape, requests * 4));
    int32_t begin = 0;
    for (int64_t r = 0; r < requests; ++r) {
      float s = 0;
      for (int32_t e = begin; e < ends[r]; ++e) s += x[e];
      std::memcpy(sums.data() + 4 * r, &s, 4);
      begin = ends[r];
    }
    const size_t out_count = in->data.size() / 4 - (short_out ? 1 : 0);
    const int64_t out_shape[] = {static_cast<int64_t>(out_count)};
    NEREID_ASSIGN_OR_RETURN(
        auto out, args.outputs->Allocate("OUT", DataType::kFp32, out_shape, out_count * 4));
    for (size_t i = 0; i < out_count; ++i) {
      const float v = 2 * x[i];
      std::memcpy(out.data() + 4 * i, &v, 4);
    }
    return Status::Ok();
  }
};

ModelInfo Model() {
  ModelInfo m;
  m.name = "ragged";
  m.version = 1;
  m.max_batch_size = 8;
  m.inputs = {{"IN", DataType::kFp32, {-1}}};
  m.inputs[0].ragged = true;
  m.outputs = {{"SUM", DataType::kFp32, {1}}, {"OUT", DataType::kFp32, {-1}}};
  m.batch_inputs = {{BatchInputKind::kAccumulatedElementCount, {"INDEX"}, DataType::kInt32, "IN"}};
  m.batch_outputs = {{{"OUT"}, "IN"}};
  return m;
}

std::unique_ptr<InferenceRequest> Request(std::vector<float> values) {
  auto r = std::make_unique<InferenceRequest>();
  auto buf = std::make_shared<std::vector<float>>(std::move(values));
  InferInput in;
  in.name = "IN";
  in.data_type = DataType::kFp32;
  in.shape = {1, static_cast<int64_t>(buf->size())};
  in.data = std::span<const char>(reinterpret_cast<const char*>(buf->data()), buf->size() * 4);
  r->inputs.push_back(in);
  r->KeepAlive(buf);
  return r;
}

std::vector<float> Floats(const InferOutput& o) {
  std::vector<float> v(o.data.size() / 4);
  std::memcpy(v.data(), o.data.data(), o.data.size());
  return v;
}

TEST(RaggedBatchTest, ShapeKeysIgnoreRaggedShapesOnly) {
  ModelInfo m = Model();
  auto a = Request({1, 2});
  auto b = Request({1, 2, 3});
  EXPECT_EQ(BatchShapeKey(*a, &m), BatchShapeKey(*b, &m));
  EXPECT_NE(BatchShapeKey(*a), BatchShapeKey(*b));
  m.inputs[0].ragged = false;
  EXPECT_NE(BatchShapeKey(*a, &m), BatchShapeKey(*b, &m));
}

TEST(RaggedBatchTest, DifferentShapesRunAsOneExecution) {
  ModelInfo m = Model();
  RaggedInstance instance;
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request({1, 2}));
  requests.push_back(Request({10, 20, 30}));
  requests.push_back(Request({5}));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(instance, m, std::move(requests), {1, 1, 1}, &times);
  EXPECT_EQ(instance.executions, 1);
  EXPECT_THAT(instance.in_shape, ElementsAre(6));
  ASSERT_EQ(results.size(), 3u);
  const std::vector<float> sums = {3, 60, 5};
  const std::vector<std::vector<float>> doubled = {{2, 4}, {20, 40, 60}, {10}};
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE(results[i].ok()) << results[i].status().ToString();
    const auto& outs = (*results[i])->outputs;
    ASSERT_EQ(outs.size(), 2u);
    EXPECT_THAT(outs[0].shape, ElementsAre(1, 1));
    EXPECT_THAT(Floats(outs[0]), ElementsAre(sums[i]));
    EXPECT_THAT(outs[1].shape, ElementsAre(1, static_cast<int64_t>(doubled[i].size())));
    EXPECT_EQ(Floats(outs[1]), doubled[i]);
  }
}

TEST(RaggedBatchTest, SingleRequestGetsBatchInputsAndItsScatterShape) {
  ModelInfo m = Model();
  RaggedInstance instance;
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request({1, 2, 3, 4}));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(instance, m, std::move(requests), {1}, &times);
  ASSERT_EQ(results.size(), 1u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().ToString();
  EXPECT_THAT(instance.in_shape, ElementsAre(4));
  EXPECT_THAT(Floats((*results[0])->outputs[0]), ElementsAre(10));
  EXPECT_THAT((*results[0])->outputs[1].shape, ElementsAre(1, 4));
}

TEST(RaggedBatchTest, BatchOutputOfTheWrongSizeFailsClearly) {
  ModelInfo m = Model();
  RaggedInstance instance;
  instance.short_out = true;
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(Request({1, 2}));
  requests.push_back(Request({3}));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(instance, m, std::move(requests), {1, 1}, &times);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().message(),
              "model 'ragged' produced batch output 'OUT' of 8 bytes, which does not match the "
              "requests' shapes of input 'IN'");
  }
  std::vector<std::unique_ptr<InferenceRequest>> one;
  one.push_back(Request({1, 2, 3}));
  auto single = RunBatchOnInstance(instance, m, std::move(one), {1}, &times);
  ASSERT_FALSE(single[0].ok());
  EXPECT_EQ(single[0].status().message(),
            "model 'ragged' produced batch output 'OUT' of 8 bytes, the request's shape [1,3] "
            "needs 12");
}

TEST(RaggedBatchTest, RequestWithoutTheSourceInputFails) {
  ModelInfo m = Model();
  RaggedInstance instance;
  auto r = Request({1});
  r->inputs[0].name = "OTHER";
  std::vector<std::unique_ptr<InferenceRequest>> requests;
  requests.push_back(std::move(r));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(instance, m, std::move(requests), {1}, &times);
  ASSERT_FALSE(results[0].ok());
  EXPECT_THAT(results[0].status().message(),
              ::testing::HasSubstr("batch input 'INDEX' needs input 'IN'"));
  EXPECT_EQ(instance.executions, 0);
}

}  // namespace
}  // namespace nereid
