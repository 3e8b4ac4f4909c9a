// The plugin's three ways to run a model (ort_instance.cc): small fixed-shape executions through
// StagedRunner's bindings, larger fixed-shape ones with outputs created over the core's memory,
// and ORT-allocated outputs for everything else (dynamic dims, BYTES, pass-through outputs).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/testing/plugin_harness.h"
#include "onnxruntime/ort_plugin_fixture.h"

namespace nereid::backends::ort {
namespace {

using ::nereid::backends::testing::FromRaw;
using ::nereid::backends::testing::RawBytes;
using ::nereid::backends::testing::RecordingAllocator;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::StartsWith;

constexpr char kAddSubConfig[] = R"({"name":"add_sub","max_batch_size":8,
  "input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[16]},
           {"name":"INPUT1","data_type":"TYPE_INT32","dims":[16]}],
  "output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[16]},
            {"name":"OUTPUT1","data_type":"TYPE_INT32","dims":[16]}]})";

constexpr char kBigReluConfig[] = R"({"name":"big_relu","max_batch_size":8,
  "input":[{"name":"X","data_type":"TYPE_FP32","dims":[4096]}],
  "output":[{"name":"Y","data_type":"TYPE_FP32","dims":[4096]}]})";

constexpr char kPassthroughConfig[] = R"({"name":"passthrough","max_batch_size":8,
  "input":[{"name":"X","data_type":"TYPE_FP32","dims":[4]}],
  "output":[{"name":"X","data_type":"TYPE_FP32","dims":[4]},
            {"name":"R","data_type":"TYPE_FP32","dims":[4]}]})";

backend::ExecuteArgs Args(const std::vector<backend::TensorRef>& inputs, RecordingAllocator* out,
                          int64_t batch_size) {
  backend::ExecuteArgs args;
  args.inputs = inputs;
  args.outputs = out;
  args.batch_size = batch_size;
  return args;
}

std::vector<float> Relu(const std::vector<float>& in) {
  std::vector<float> out;
  for (float v : in) out.push_back(v > 0 ? v : 0);
  return out;
}

// Every batch size and both output selections, more signatures than StagedRunner keeps, twice
// over: each call must see its own inputs, never a previous call's bound buffers.
TEST_F(OrtPluginTest, SmallFixedShapesGiveEachCallItsOwnResults) {
  auto model = Load("add_sub", "add_sub.onnx", kAddSubConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  int seed = 0;
  for (int round = 0; round < 2; ++round) {
    for (int64_t batch = 1; batch <= 8; ++batch) {
      for (bool only_diff : {false, true}) {
        ++seed;
        std::vector<int32_t> in0, in1;
        for (int64_t i = 0; i < batch * 16; ++i) {
          in0.push_back(static_cast<int32_t>(i * seed));
          in1.push_back(static_cast<int32_t>(seed - i));
        }
        const std::vector<char> raw0 = RawBytes(in0), raw1 = RawBytes(in1);
        const std::vector<int64_t> shape{batch, 16};
        const std::vector<backend::TensorRef> inputs{{"INPUT0", DataType::kInt32, shape, raw0},
                                                     {"INPUT1", DataType::kInt32, shape, raw1}};
        RecordingAllocator out = only_diff ? RecordingAllocator({"OUTPUT1"}) : RecordingAllocator();
        Status status = instance->Execute(Args(inputs, &out, batch));
        ASSERT_TRUE(status.ok()) << status.ToString();
        std::vector<int32_t> sum, diff;
        for (size_t i = 0; i < in0.size(); ++i) {
          sum.push_back(in0[i] + in1[i]);
          diff.push_back(in0[i] - in1[i]);
        }
        ASSERT_EQ(out.outputs.size(), only_diff ? 1u : 2u);
        EXPECT_THAT(out.outputs["OUTPUT1"].shape, ElementsAre(batch, 16));
        EXPECT_THAT(FromRaw<int32_t>(out.outputs["OUTPUT1"].data), ElementsAreArray(diff));
        if (!only_diff) {
          EXPECT_THAT(FromRaw<int32_t>(out.outputs["OUTPUT0"].data), ElementsAreArray(sum));
        }
      }
    }
  }
}

TEST_F(OrtPluginTest, LargeFixedShapeOutputsAreWrittenInPlace) {
  auto model = Load("big_relu", "big_relu.onnx", kBigReluConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  for (int64_t batch : {2, 1, 3}) {
    std::vector<float> x;
    for (int64_t i = 0; i < batch * 4096; ++i) x.push_back(static_cast<float>(i % 7) - 3.0f);
    const std::vector<char> raw = RawBytes(x);
    const std::vector<int64_t> shape{batch, 4096};
    const std::vector<backend::TensorRef> inputs{{"X", DataType::kFp32, shape, raw}};
    RecordingAllocator out;
    Status status = instance->Execute(Args(inputs, &out, batch));
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_THAT(out.outputs["Y"].shape, ElementsAre(batch, 4096));
    EXPECT_EQ(FromRaw<float>(out.outputs["Y"].data), Relu(x));
  }
  // The output was given to ORT before Run, sized for the batch the core announced: when the
  // model's rows differ from it, ORT refuses the buffer with an error, never a short write.
  std::vector<char> raw(2 * 4096 * sizeof(float), 0);
  const std::vector<int64_t> shape{2, 4096};
  const std::vector<backend::TensorRef> inputs{{"X", DataType::kFp32, shape, raw}};
  RecordingAllocator out;
  Status status = instance->Execute(Args(inputs, &out, 3));
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), StartsWith("onnxruntime execute failure: "));
  EXPECT_EQ(out.outputs.count("Y"), 1u);  // allocated before Run: written in place
  // Wrong byte size is still refused before ORT sees it.
  const std::vector<backend::TensorRef> short_input{
      {"X", DataType::kFp32, shape, std::span<const char>(raw).first(raw.size() - 4)}};
  RecordingAllocator refused;
  status = instance->Execute(Args(short_input, &refused, 2));
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), StartsWith("onnxruntime execute failure: input 'X' holds "));
  EXPECT_TRUE(refused.outputs.empty());
}

// ORT leaves a preallocated buffer unwritten when a graph output is a graph input: such outputs
// are left for ORT to allocate, and the other outputs still come out right.
TEST_F(OrtPluginTest, PassThroughOutputsAreNotPreallocated) {
  auto model = Load("passthrough", "passthrough.onnx", kPassthroughConfig);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  for (int call = 0; call < 3; ++call) {
    const std::vector<float> x{-1.0f * call, 2.0f, -3.0f, 4.0f + call, 5.0f, -6.0f, 7.0f, 8.0f};
    const std::vector<char> raw = RawBytes(x);
    const std::vector<int64_t> shape{2, 4};
    const std::vector<backend::TensorRef> inputs{{"X", DataType::kFp32, shape, raw}};
    for (bool only_r : {false, true}) {
      RecordingAllocator out = only_r ? RecordingAllocator({"R"}) : RecordingAllocator();
      Status status = instance->Execute(Args(inputs, &out, 2));
      ASSERT_TRUE(status.ok()) << status.ToString();
      EXPECT_EQ(FromRaw<float>(out.outputs["R"].data), Relu(x));
      if (!only_r) {
        EXPECT_EQ(FromRaw<float>(out.outputs["X"].data), x);
      }
    }
  }
}

// Outputs whose dims only ORT knows (add_sub without a batch dimension: [-1,16] is the model's
// own dynamic dim) keep ORT's allocation; the shape follows each call's input.
TEST_F(OrtPluginTest, DynamicShapeOutputsFollowEachCall) {
  auto model = Load("add_sub", "add_sub.onnx", R"({"name":"add_sub","max_batch_size":0,
    "input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[-1,16]},
             {"name":"INPUT1","data_type":"TYPE_INT32","dims":[-1,16]}],
    "output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[-1,16]},
              {"name":"OUTPUT1","data_type":"TYPE_INT32","dims":[-1,16]}]})");
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  auto instance = Instance(**model);
  ASSERT_NE(instance, nullptr);
  for (int64_t rows : {3, 1, 20}) {  // no batch dimension: the leading dim is the model's own
    std::vector<int32_t> in0, in1;
    for (int64_t i = 0; i < rows * 16; ++i) {
      in0.push_back(static_cast<int32_t>(i));
      in1.push_back(static_cast<int32_t>(rows));
    }
    const std::vector<char> raw0 = RawBytes(in0), raw1 = RawBytes(in1);
    const std::vector<int64_t> shape{rows, 16};
    const std::vector<backend::TensorRef> inputs{{"INPUT0", DataType::kInt32, shape, raw0},
                                                 {"INPUT1", DataType::kInt32, shape, raw1}};
    RecordingAllocator out;
    Status status = instance->Execute(Args(inputs, &out, 0));
    ASSERT_TRUE(status.ok()) << status.ToString();
    EXPECT_THAT(out.outputs["OUTPUT0"].shape, ElementsAre(rows, 16));
    std::vector<int32_t> sum;
    for (size_t i = 0; i < in0.size(); ++i) sum.push_back(in0[i] + in1[i]);
    EXPECT_THAT(FromRaw<int32_t>(out.outputs["OUTPUT0"].data), ElementsAreArray(sum));
  }
}

}  // namespace
}  // namespace nereid::backends::ort
