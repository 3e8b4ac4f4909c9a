#include "core/model/classification.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/config/test_temp_dir.h"
#include "core/tensor/bytes_tensor.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

std::vector<std::string> Elements(const std::string& data) {
  std::vector<std::string> out;
  EXPECT_TRUE(ForEachBytesElement(data, [&](std::string_view e) { out.emplace_back(e); }).ok());
  return out;
}

template <typename T>
InferOutput Output(DataType type, const std::vector<T>& values, Shape shape) {
  InferOutput out;
  out.name = "OUT";
  out.data_type = type;
  out.shape = std::move(shape);
  out.data.resize(values.size() * sizeof(T));
  std::memcpy(out.data.data(), values.data(), out.data.size());
  return out;
}

InferenceResponse Response(InferOutput out, ParameterValue n) {
  InferenceResponse r;
  r.outputs.push_back(std::move(out));
  r.request = std::make_unique<InferenceRequest>();
  RequestedOutput o;
  o.name = "OUT";
  o.parameters.Set("classification", n);
  r.request->outputs.push_back(std::move(o));
  return r;
}

TEST(ClassificationTest, TopNPerBatchItemWithLabels) {
  ModelInfo model;
  model.max_batch_size = 4;
  auto r =
      Response(Output<float>(DataType::kFp32, {0.1f, 0.7f, 0.2f, 3, 1, 2}, {2, 3}), int64_t{2});
  OutputLabels labels{{"OUT", {"a", "", "c"}}};
  ASSERT_TRUE(ApplyClassification(model, labels, &r).ok());
  EXPECT_EQ(r.outputs[0].data_type, DataType::kBytes);
  EXPECT_EQ(r.outputs[0].shape, (Shape{2, 2}));
  EXPECT_EQ(
      Elements(r.outputs[0].data),
      (std::vector<std::string>{"0.700000:1", "0.200000:2:c", "3.000000:0:a", "2.000000:2:c"}));
}

TEST(ClassificationTest, NonBatchingIntegersAndClamping) {
  ModelInfo model;
  auto r = Response(Output<int8_t>(DataType::kInt8, {-5, 7, 7}, {3}), int64_t{10});
  ASSERT_TRUE(ApplyClassification(model, {}, &r).ok());
  EXPECT_EQ(r.outputs[0].shape, (Shape{3}));
  EXPECT_EQ(Elements(r.outputs[0].data), (std::vector<std::string>{"7:1", "7:2", "-5:0"}));
}

TEST(ClassificationTest, ZeroLeavesTheOutputAlone) {
  ModelInfo model;
  auto r = Response(Output<int32_t>(DataType::kInt32, {1, 2}, {2}), int64_t{0});
  ASSERT_TRUE(ApplyClassification(model, {}, &r).ok());
  EXPECT_EQ(r.outputs[0].data_type, DataType::kInt32);
}

TEST(ClassificationTest, Errors) {
  ModelInfo model;
  auto bytes = Response(Output<char>(DataType::kBytes, {0, 0, 0, 0}, {1}), int64_t{1});
  Status s = ApplyClassification(model, {}, &bytes);
  EXPECT_EQ(s.message(), "class result not available for output due to unsupported type 'BYTES'");
  auto negative = Response(Output<int32_t>(DataType::kInt32, {1}, {1}), int64_t{-1});
  EXPECT_EQ(ApplyClassification(model, {}, &negative).code(), StatusCode::kInvalidArgument);
  auto text = Response(Output<int32_t>(DataType::kInt32, {1}, {1}), std::string("2"));
  EXPECT_EQ(ApplyClassification(model, {}, &text).code(), StatusCode::kInvalidArgument);
}

TEST(ClassificationTest, LoadsLabelsAndRefusesEscapes) {
  config::testing::TempDir t;
  t.WriteFile("labels.txt", "cat\r\ndog\n\nbird");
  inference::ModelConfig config;
  config.set_name("m");
  config.add_output()->set_name("OUT");
  config.mutable_output(0)->set_label_filename("labels.txt");
  auto labels = LoadOutputLabels(config, t.path());
  ASSERT_TRUE(labels.ok()) << labels.status().message();
  EXPECT_EQ(labels->at("OUT"), (std::vector<std::string>{"cat", "dog", "", "bird"}));
  std::filesystem::create_symlink("/etc/hostname", t.path() / "link.txt");
  config.mutable_output(0)->set_label_filename("link.txt");
  EXPECT_FALSE(LoadOutputLabels(config, t.path()).ok());
  config.mutable_output(0)->set_label_filename("missing.txt");
  EXPECT_FALSE(LoadOutputLabels(config, t.path()).ok());
}

}  // namespace
}  // namespace nereid
