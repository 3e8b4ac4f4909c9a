#include "core/model/request_validator.h"

#include <gtest/gtest.h>

#include "core/tensor/bytes_tensor.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

ModelInfo AddSub(int max_batch) {
  ModelInfo m;
  m.name = "simple";
  m.version = 1;
  m.max_batch_size = max_batch;
  m.inputs = {{"INPUT0", DataType::kInt32, {16}}, {"INPUT1", DataType::kInt32, {16}}};
  m.outputs = {{"OUTPUT0", DataType::kInt32, {16}}, {"OUTPUT1", DataType::kInt32, {16}}};
  return m;
}

struct Req {
  InferenceRequest r;
  std::string buf = std::string(16 * 4 * 2, '\0');
  Req(Shape shape, int n_inputs = 2) {
    for (int i = 0; i < n_inputs; ++i) {
      InferInput in;
      in.name = "INPUT" + std::to_string(i);
      in.data_type = DataType::kInt32;
      in.shape = shape;
      in.data = std::span<const char>(buf.data(), 64 * (shape.size() == 2 ? shape[0] : 1));
      r.inputs.push_back(in);
    }
  }
};

std::string Message(const StatusOr<int64_t>& s) { return s.ok() ? "" : s.status().message(); }

TEST(RequestValidatorTest, AcceptsBatchedRequest) {
  Req q({2, 16});
  auto b = ValidateRequest(AddSub(8), q.r);
  ASSERT_TRUE(b.ok()) << Message(b);
  EXPECT_EQ(*b, 2);
}

TEST(RequestValidatorTest, NonBatchingReturnsZero) {
  Req q({16});
  auto b = ValidateRequest(AddSub(0), q.r);
  ASSERT_TRUE(b.ok()) << Message(b);
  EXPECT_EQ(*b, 0);
}

TEST(RequestValidatorTest, MissingInput) {
  Req q({1, 16}, 1);
  auto b = ValidateRequest(AddSub(8), q.r);
  EXPECT_NE(Message(b).find("Missing required input(s) ['INPUT1']"), std::string::npos);
}

TEST(RequestValidatorTest, UnknownInputAndOutput) {
  Req q({1, 16});
  q.r.inputs[1].name = "NOPE";
  EXPECT_NE(Message(ValidateRequest(AddSub(8), q.r)).find("unexpected inference input 'NOPE'"),
            std::string::npos);
  Req q2({1, 16});
  q2.r.outputs.push_back({"BAD", {}});
  EXPECT_NE(Message(ValidateRequest(AddSub(8), q2.r)).find("unexpected inference output 'BAD'"),
            std::string::npos);
}

TEST(RequestValidatorTest, DuplicateOutput) {
  Req q({1, 16});
  q.r.outputs.push_back({"OUTPUT0", {}});
  q.r.outputs.push_back({"OUTPUT0", {}});
  EXPECT_EQ(Message(ValidateRequest(AddSub(8), q.r)), "output 'OUTPUT0' already exists in request");
}

TEST(RequestValidatorTest, WrongDatatype) {
  Req q({1, 16});
  q.r.inputs[0].data_type = DataType::kFp32;
  EXPECT_NE(Message(ValidateRequest(AddSub(8), q.r)).find("data-type is 'FP32'"),
            std::string::npos);
}

TEST(RequestValidatorTest, WrongShapeAndBatch) {
  Req q({1, 15});
  EXPECT_NE(Message(ValidateRequest(AddSub(8), q.r)).find("Expected [-1,16], got [1,15]"),
            std::string::npos);
  Req big({9, 16});
  big.buf.resize(9 * 64);
  for (auto& in : big.r.inputs) in.data = std::span<const char>(big.buf.data(), 9 * 64);
  EXPECT_NE(Message(ValidateRequest(AddSub(8), big.r)).find("batch-size must be <= 8"),
            std::string::npos);
  Req zero({0, 16});
  EXPECT_NE(Message(ValidateRequest(AddSub(8), zero.r)).find(">= 1"), std::string::npos);
}

// Triton's words (core InferenceRequest::Normalize) for an input without a batch dimension and
// for inputs whose batch sizes differ.
TEST(RequestValidatorTest, MissingOrDifferingBatchDimension) {
  Req q({1, 16});
  q.r.id = "r1";
  q.r.inputs[1].shape = {};
  EXPECT_EQ(Message(ValidateRequest(AddSub(8), q.r)),
            "[request id: r1] input 'INPUT1' has no shape but model requires batch dimension for "
            "'simple'");
  Req two({2, 16});
  two.r.inputs[1].shape = {1, 16};
  EXPECT_EQ(Message(ValidateRequest(AddSub(8), two.r)),
            "[request id: <id_unknown>] input 'INPUT1' batch size does not match other inputs for "
            "'simple'");
}

TEST(RequestValidatorTest, ByteSizeMismatch) {
  Req q({1, 16});
  q.r.inputs[0].data = q.r.inputs[0].data.subspan(0, 60);
  EXPECT_NE(Message(ValidateRequest(AddSub(8), q.r)).find("Expected 64, got 60"),
            std::string::npos);
}

TEST(RequestValidatorTest, BytesElementCount) {
  ModelInfo m;
  m.name = "s";
  m.inputs = {{"IN", DataType::kBytes, {-1}}};
  m.outputs = {{"OUT", DataType::kBytes, {-1}}};
  std::string data;
  AppendBytesElement("a", &data);
  InferenceRequest r;
  r.inputs.push_back({"IN", DataType::kBytes, {2}, data, {}});
  EXPECT_NE(Message(ValidateRequest(m, r)).find("expected 2 string elements"), std::string::npos);
  r.inputs[0].shape = {1};
  EXPECT_TRUE(ValidateRequest(m, r).ok());
}

TEST(RequestValidatorTest, DuplicateInput) {
  Req q({1, 16});
  q.r.inputs.push_back(q.r.inputs[0]);
  EXPECT_NE(
      Message(ValidateRequest(AddSub(8), q.r)).find("input 'INPUT0' already exists in request"),
      std::string::npos);
}

// BOOL bytes other than 0 and 1 are refused whatever the frontend (JSON, binary, gRPC).
TEST(RequestValidatorTest, BoolBytesMustBeZeroOrOne) {
  ModelInfo m;
  m.name = "b";
  m.inputs = {{"IN", DataType::kBool, {4}}};
  m.outputs = {{"OUT", DataType::kBool, {4}}};
  std::string data("\x01\x00\x01\x00", 4);
  InferenceRequest r;
  r.inputs.push_back({"IN", DataType::kBool, {4}, data, {}});
  EXPECT_TRUE(ValidateRequest(m, r).ok());
  std::string bad("\x01\x00\x02\x00", 4);
  r.inputs[0].data = bad;
  EXPECT_EQ(Message(ValidateRequest(m, r)),
            "[request id: <id_unknown>] invalid value 2 at element 2 of BOOL input 'IN': BOOL "
            "elements must be 0 (false) or 1 (true)");
  bad[2] = '\xff';
  EXPECT_NE(Message(ValidateRequest(m, r)).find("invalid value 255"), std::string::npos);
}

// Client text quoted in errors is bounded (request id, unknown tensor names).
TEST(RequestValidatorTest, LongClientTextIsTruncatedInErrors) {
  Req q({1, 16});
  q.r.id = std::string(5000, 'i');
  q.r.inputs[1].name = std::string(100000, 'n');
  const std::string msg = Message(ValidateRequest(AddSub(8), q.r));
  EXPECT_LT(msg.size(), 500u) << msg;
  EXPECT_NE(msg.find("... (5000 bytes)"), std::string::npos) << msg;
  EXPECT_NE(msg.find("... (100000 bytes)"), std::string::npos) << msg;
}

// FromConfig indexes tensor names; lookups agree with a scan.
TEST(RequestValidatorTest, ManyInputsAreCheckedByIndex) {
  inference::ModelConfig config;
  config.set_name("many");
  for (int i = 0; i < 3000; ++i) {
    auto* in = config.add_input();
    in->set_name("I" + std::to_string(i));
    in->set_data_type(inference::TYPE_INT32);
    in->add_dims(1);
  }
  config.add_output()->set_name("O");
  const ModelInfo m = ModelInfo::FromConfig(config, 1);
  ASSERT_NE(m.FindInput("I2999"), nullptr);
  EXPECT_EQ(m.FindInput("I2999")->name, "I2999");
  EXPECT_EQ(m.FindInput("I3000"), nullptr);
  EXPECT_EQ(m.FindOutput("O"), &m.outputs[0]);
  std::string buf(4, '\0');
  InferenceRequest r;
  for (int i = 2999; i >= 0; --i) {
    r.inputs.push_back({"I" + std::to_string(i), DataType::kInt32, {1}, buf, {}});
  }
  EXPECT_TRUE(ValidateRequest(m, r).ok()) << Message(ValidateRequest(m, r));
  r.inputs.push_back(r.inputs[10]);
  EXPECT_NE(Message(ValidateRequest(m, r)).find("input 'I2989' already exists in request"),
            std::string::npos);
}

}  // namespace
}  // namespace nereid
