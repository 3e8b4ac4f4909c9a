// Gathering requests into one execution and splitting the outputs back (batch_runner.h).
#include "core/scheduler/batch_runner.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/model/instance_runner.h"

namespace nereid {
namespace {

// Doubles FP32 input IN into OUT (same shape); writes BYTES output NAMES with one string per batch
// item ("<item>" repeated item+1 times) so splitting variable-length data is checked.
class TestInstance : public backend::ModelInstance {
 public:
  std::vector<int64_t> batch_sizes;
  Status fail = Status::Ok();
  int64_t wrong_batch = 0;  // when set, OUT claims this batch dimension

  Status Execute(const backend::ExecuteArgs& args) override {
    batch_sizes.push_back(args.batch_size);
    if (!fail.ok()) return fail;
    const backend::TensorRef& in = args.inputs[0];
    if (args.outputs->IsRequested("OUT")) {
      Shape shape(in.shape.begin(), in.shape.end());
      if (wrong_batch != 0) shape[0] = wrong_batch;
      auto buf = args.outputs->Allocate("OUT", DataType::kFp32, shape, in.data.size());
      if (!buf.ok()) return buf.status();
      const float* src = reinterpret_cast<const float*>(in.data.data());
      float* dst = reinterpret_cast<float*>(buf->data());
      for (size_t i = 0; i < in.data.size() / 4; ++i) dst[i] = 2 * src[i];
    }
    if (args.outputs->IsRequested("NAMES")) {
      std::string data;
      for (int64_t i = 0; i < args.batch_size; ++i) {
        const float first = reinterpret_cast<const float*>(in.data.data())[i * in.shape[1]];
        const std::string s(static_cast<size_t>(first), 'x');
        const uint32_t len = static_cast<uint32_t>(s.size());
        data.append(reinterpret_cast<const char*>(&len), 4);
        data += s;
      }
      const int64_t shape[] = {args.batch_size, 1};
      auto buf = args.outputs->Allocate("NAMES", DataType::kBytes, shape, data.size());
      if (!buf.ok()) return buf.status();
      std::memcpy(buf->data(), data.data(), data.size());
    }
    return Status::Ok();
  }
};

ModelInfo Model() {
  ModelInfo m;
  m.name = "m";
  m.version = 1;
  m.max_batch_size = 8;
  m.inputs = {{"IN", DataType::kFp32, {2}}};
  m.outputs = {{"OUT", DataType::kFp32, {2}}, {"NAMES", DataType::kBytes, {1}}};
  return m;
}

std::unique_ptr<InferenceRequest> Request(std::vector<float> values,
                                          std::vector<std::string> outs = {}) {
  auto r = std::make_unique<InferenceRequest>();
  auto buf = std::make_shared<std::vector<float>>(std::move(values));
  InferInput in;
  in.name = "IN";
  in.data_type = DataType::kFp32;
  in.shape = {static_cast<int64_t>(buf->size() / 2), 2};
  in.data = std::span<const char>(reinterpret_cast<const char*>(buf->data()), buf->size() * 4);
  r->inputs.push_back(in);
  r->KeepAlive(buf);
  for (auto& o : outs) r->outputs.push_back({o, {}});
  return r;
}

std::vector<float> Floats(const InferOutput& o) {
  std::vector<float> v(o.data.size() / 4);
  std::memcpy(v.data(), o.data.data(), o.data.size());
  return v;
}

TEST(BatchRunner, ShapeKeyIgnoresBatchDimensionAndInputOrder) {
  auto a = Request({1, 2});
  auto b = Request({1, 2, 3, 4});
  EXPECT_EQ(BatchShapeKey(*a), BatchShapeKey(*b));
  auto c = Request({1, 2});
  c->inputs[0].shape = {1, 1, 2};
  EXPECT_NE(BatchShapeKey(*a), BatchShapeKey(*c));
  auto d = Request({1, 2});
  d->inputs[0].data_type = DataType::kInt32;
  EXPECT_NE(BatchShapeKey(*a), BatchShapeKey(*d));
  auto e = Request({1, 2});
  InferInput extra = e->inputs[0];
  extra.name = "AAA";
  e->inputs.push_back(extra);
  auto f = Request({1, 2});
  f->inputs.insert(f->inputs.begin(), extra);
  EXPECT_EQ(BatchShapeKey(*e), BatchShapeKey(*f));
  EXPECT_NE(BatchShapeKey(*a), BatchShapeKey(*e));
}

// The key's bytes: per input in name order, name NUL type, each non-batch dimension as 8 bytes,
// NUL. One input takes a path of its own (no sorting); it must give the same bytes.
TEST(BatchRunner, ShapeKeyBytesAreTheSameForOneInputAndForMany) {
  auto one = Request({1, 2, 3, 4});
  std::string want = std::string("IN") + '\0' + static_cast<char>(DataType::kFp32);
  const int64_t two = 2;
  want.append(reinterpret_cast<const char*>(&two), sizeof(two));
  want += '\0';
  EXPECT_EQ(BatchShapeKey(*one), want);
  auto many = Request({1, 2});
  InferInput b = many->inputs[0];
  b.name = "B";
  b.shape = {1, 7, 3};
  many->inputs.insert(many->inputs.begin(), b);
  auto only_b = Request({1, 2});
  only_b->inputs[0] = b;
  EXPECT_EQ(BatchShapeKey(*many), BatchShapeKey(*only_b) + want);
  auto none = std::make_unique<InferenceRequest>();
  EXPECT_EQ(BatchShapeKey(*none), "");
}

TEST(BatchRunner, OneExecutionSplitPerRequest) {
  TestInstance inst;
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({1, 2}));
  reqs.push_back(Request({3, 4, 5, 6}, {"NAMES", "OUT"}));
  reqs.push_back(Request({2, 8}, {"OUT"}));
  reqs[0]->id = "first";
  ExecutionTimes times;
  auto results = RunBatchOnInstance(inst, Model(), std::move(reqs), {1, 2, 1}, &times);
  ASSERT_EQ(inst.batch_sizes, std::vector<int64_t>{4});
  ASSERT_EQ(results.size(), 3u);
  for (auto& r : results) ASSERT_TRUE(r.ok()) << r.status().message();
  const InferenceResponse& r0 = **results[0];
  EXPECT_EQ(r0.id, "first");
  ASSERT_EQ(r0.outputs.size(), 2u);  // all outputs, config order
  EXPECT_EQ(r0.outputs[0].name, "OUT");
  EXPECT_EQ(r0.outputs[0].shape, (Shape{1, 2}));
  EXPECT_EQ(Floats(r0.outputs[0]), (std::vector<float>{2, 4}));
  EXPECT_EQ(r0.outputs[1].shape, (Shape{1, 1}));
  EXPECT_EQ(r0.outputs[1].data, std::string("\x01\0\0\0x", 5));
  const InferenceResponse& r1 = **results[1];
  ASSERT_EQ(r1.outputs.size(), 2u);  // request order
  EXPECT_EQ(r1.outputs[0].name, "NAMES");
  EXPECT_EQ(r1.outputs[0].shape, (Shape{2, 1}));
  EXPECT_EQ(r1.outputs[0].data, std::string("\x03\0\0\0xxx\x05\0\0\0xxxxx", 16));
  EXPECT_EQ(Floats(r1.outputs[1]), (std::vector<float>{6, 8, 10, 12}));
  const InferenceResponse& r2 = **results[2];
  ASSERT_EQ(r2.outputs.size(), 1u);
  EXPECT_EQ(Floats(r2.outputs[0]), (std::vector<float>{4, 16}));
  EXPECT_NE(r2.request, nullptr);  // each response takes its own request back
  EXPECT_LE(times.compute_start, times.input_end);
  EXPECT_LE(times.output_start, times.compute_end);
}

TEST(BatchRunner, SingleRequestRunsAsIs) {
  TestInstance inst;
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({1, 2, 3, 4}, {"OUT"}));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(inst, Model(), std::move(reqs), {2}, &times);
  ASSERT_TRUE(results[0].ok());
  EXPECT_EQ(inst.batch_sizes, std::vector<int64_t>{2});
  EXPECT_EQ(Floats((*results[0])->outputs[0]), (std::vector<float>{2, 4, 6, 8}));
}

TEST(BatchRunner, BackendErrorFailsEveryRequest) {
  TestInstance inst;
  inst.fail = Internal("boom");
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({1, 2}));
  reqs.push_back(Request({1, 2}));
  ExecutionTimes times;
  bool executed = true;
  auto results = RunBatchOnInstance(inst, Model(), std::move(reqs), {1, 1}, &times, &executed);
  EXPECT_FALSE(executed);
  ASSERT_EQ(results.size(), 2u);
  for (auto& r : results) EXPECT_EQ(r.status().message(), "boom");
}

TEST(BatchRunner, OutputWithoutBatchDimensionIsAnError) {
  TestInstance inst;
  inst.wrong_batch = 3;
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({1, 2}, {"OUT"}));
  reqs.push_back(Request({1, 2}, {"OUT"}));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(inst, Model(), std::move(reqs), {1, 1}, &times);
  for (auto& r : results) {
    EXPECT_EQ(r.status().code(), StatusCode::kInternal);
    EXPECT_NE(r.status().message().find("batch dimension"), std::string::npos);
  }
}

// Fails alone every request whose first value is negative (ExecuteArgs::request_errors, API v6),
// reschedules every one whose first value is kReschedule (ExecuteArgs::release_flags, API v7) and
// writes OUT (doubled) for the rows of the others only.
constexpr float kReschedule = -100;
class PerRequestErrorInstance : public backend::ModelInstance {
 public:
  size_t errors_seen = 0;

  Status Execute(const backend::ExecuteArgs& args) override {
    errors_seen = args.request_errors.size();
    const float* in = reinterpret_cast<const float*>(args.inputs[0].data.data());
    std::vector<float> out;
    size_t row = 0;
    for (size_t i = 0; i < args.requests.size(); ++i) {
      const auto rows = static_cast<size_t>(args.requests[i].batch_size);
      if (in[row * 2] == kReschedule) {  // API v7: no rows, the request runs again later
        args.release_flags[i] = backend::kReleaseReschedule;
      } else if (in[row * 2] < 0) {
        args.request_errors[i] = InvalidArgument("request " + std::to_string(i) + " failed");
      } else {
        for (size_t k = row * 2; k < (row + rows) * 2; ++k) out.push_back(2 * in[k]);
      }
      row += rows;
    }
    if (out.empty()) return Status::Ok();
    const int64_t shape[] = {static_cast<int64_t>(out.size() / 2), 2};
    auto buf = args.outputs->Allocate("OUT", DataType::kFp32, shape, out.size() * 4);
    if (!buf.ok()) return buf.status();
    std::memcpy(buf->data(), out.data(), out.size() * 4);
    return Status::Ok();
  }
};

ModelInfo OutOnlyModel() {
  ModelInfo m = Model();
  m.outputs.pop_back();  // OUT only
  m.wants_request_info = true;
  return m;
}

TEST(BatchRunner, RequestErrorFailsOnlyThatRequest) {
  PerRequestErrorInstance inst;
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({1, 2}));
  reqs.push_back(Request({-1, 2, 3, 4}));
  reqs.push_back(Request({5, 6, 7, 8}));
  reqs.push_back(Request({-2, 0}));
  ExecutionTimes times;
  auto results = RunBatchOnInstance(inst, OutOnlyModel(), std::move(reqs), {1, 2, 2, 1}, &times);
  EXPECT_EQ(inst.errors_seen, 4u);
  ASSERT_EQ(results.size(), 4u);
  ASSERT_TRUE(results[0].ok()) << results[0].status().message();
  EXPECT_EQ(Floats((*results[0])->outputs[0]), (std::vector<float>{2, 4}));
  EXPECT_NE((*results[0])->request, nullptr);
  EXPECT_EQ(results[1].status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(results[1].status().message(), "request 1 failed");
  ASSERT_TRUE(results[2].ok()) << results[2].status().message();
  EXPECT_EQ((*results[2])->outputs[0].shape, (Shape{2, 2}));
  EXPECT_EQ(Floats((*results[2])->outputs[0]), (std::vector<float>{10, 12, 14, 16}));
  EXPECT_EQ(results[3].status().message(), "request 3 failed");
}

TEST(BatchRunner, EveryRequestFailedAloneNeedsNoOutputs) {
  PerRequestErrorInstance inst;
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({-1, 2}));
  reqs.push_back(Request({-3, 4}));
  ExecutionTimes times;
  bool executed = false;
  auto results =
      RunBatchOnInstance(inst, OutOnlyModel(), std::move(reqs), {1, 1}, &times, &executed);
  EXPECT_TRUE(executed);  // counted as an execution, as Triton's backend reports it
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status().message(), "request 0 failed");
  EXPECT_EQ(results[1].status().message(), "request 1 failed");
}

TEST(BatchRunner, LoneRequestErrorIsItsResult) {
  PerRequestErrorInstance inst;
  std::vector<std::unique_ptr<InferenceRequest>> reqs;
  reqs.push_back(Request({-1, 2}));
  ExecutionTimes times;
  bool executed = false;
  auto results = RunBatchOnInstance(inst, OutOnlyModel(), std::move(reqs), {1}, &times, &executed);
  EXPECT_TRUE(executed);
  EXPECT_EQ(inst.errors_seen, 1u);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(results[0].status().message(), "request 0 failed");
}

TEST(BatchRunner, SplitLeavesFailedRequestsOut) {
  // SplitBatchResponse alone: the outputs hold the rows of requests 0 and 2 only.
  auto a = Request({1, 2});
  auto b = Request({9, 9});
  auto c = Request({3, 4});
  const InferenceRequest* items[] = {a.get(), b.get(), c.get()};
  InferenceResponse all;
  InferOutput out;
  out.name = "OUT";
  out.data_type = DataType::kFp32;
  out.shape = {2, 2};
  const float values[] = {1, 2, 3, 4};
  out.data.assign(reinterpret_cast<const char*>(values), sizeof(values));
  all.outputs.push_back(std::move(out));
  const Status errors[] = {Status::Ok(), Unavailable("gone"), Status::Ok()};
  auto results = SplitBatchResponse(OutOnlyModel(), all, items, {1, 1, 1}, errors);
  ASSERT_EQ(results.size(), 3u);
  ASSERT_TRUE(results[0].ok());
  EXPECT_EQ(Floats((*results[0])->outputs[0]), (std::vector<float>{1, 2}));
  EXPECT_EQ(results[1].status().code(), StatusCode::kUnavailable);
  ASSERT_TRUE(results[2].ok());
  EXPECT_EQ(Floats((*results[2])->outputs[0]), (std::vector<float>{3, 4}));
}

// A caller that cannot take a request back (the dynamic batcher) gets Triton's refusal for the
// rescheduled request alone; one that can (iterative sequences) gets it back without outputs.
TEST(BatchRunner, RescheduledRequestIsRefusedOrHandedBack) {
  for (bool can : {false, true}) {
    PerRequestErrorInstance inst;
    std::vector<std::unique_ptr<InferenceRequest>> reqs;
    reqs.push_back(Request({1, 2}));
    reqs.push_back(Request({kReschedule, 2}));
    reqs.push_back(Request({5, 6}));
    std::vector<uint32_t> flags(can ? 3 : 0, backend::kReleaseAll);
    ExecutionTimes times;
    auto results = RunBatchOnInstance(inst, OutOnlyModel(), std::move(reqs), {1, 1, 1}, &times,
                                      nullptr, flags);
    ASSERT_EQ(results.size(), 3u);
    ASSERT_TRUE(results[0].ok()) << results[0].status().message();
    EXPECT_EQ(Floats((*results[0])->outputs[0]), (std::vector<float>{2, 4}));
    ASSERT_TRUE(results[2].ok()) << results[2].status().message();
    EXPECT_EQ(Floats((*results[2])->outputs[0]), (std::vector<float>{10, 12}));
    if (!can) {
      EXPECT_EQ(results[1].status().code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(results[1].status().message(), RescheduleRefused().message());
    } else {
      ASSERT_TRUE(results[1].ok()) << results[1].status().message();
      EXPECT_TRUE((*results[1])->outputs.empty());
      EXPECT_NE((*results[1])->request, nullptr);
      EXPECT_EQ(flags[1], backend::kReleaseReschedule);
    }
  }
}

}  // namespace
}  // namespace nereid
