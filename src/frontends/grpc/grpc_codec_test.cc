#include "frontends/grpc/grpc_codec.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/request/request_limits.h"
#include "grpc_service.pb.h"

namespace nereid {
namespace {

using inference::ModelInferRequest;
using ::testing::HasSubstr;

std::shared_ptr<ModelInferRequest> Message() {
  auto m = std::make_shared<ModelInferRequest>();
  m->set_model_name("m");
  m->set_id("req-1");
  return m;
}

ModelInferRequest::InferInputTensor* AddInput(ModelInferRequest* m, const std::string& name,
                                              const std::string& datatype,
                                              std::vector<int64_t> shape) {
  auto* in = m->add_inputs();
  in->set_name(name);
  in->set_datatype(datatype);
  for (int64_t d : shape) in->add_shape(d);
  return in;
}

template <typename T>
std::vector<T> As(std::span<const char> data) {
  std::vector<T> out(data.size() / sizeof(T));
  std::memcpy(out.data(), data.data(), out.size() * sizeof(T));
  return out;
}

TEST(GrpcCodec, ParsesVersions) {
  EXPECT_EQ(*ParseModelVersion(""), -1);
  EXPECT_EQ(*ParseModelVersion("3"), 3);
  EXPECT_EQ(ParseModelVersion("x").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseModelVersion("-1").status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(ParseModelVersion("1a").status().code(), StatusCode::kInvalidArgument);
}

TEST(GrpcCodec, RawInputsAreViewsIntoTheMessage) {
  auto m = Message();
  m->set_model_version("2");
  AddInput(m.get(), "a", "FP32", {1, 2});
  AddInput(m.get(), "b", "INT8", {3});
  float f[2] = {1.5f, -2.0f};
  m->add_raw_input_contents(std::string(reinterpret_cast<char*>(f), sizeof(f)));
  m->add_raw_input_contents(std::string("\x01\x02\x03", 3));
  auto r = DecodeModelInferRequest(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const InferenceRequest& req = **r;
  EXPECT_EQ(req.model_name, "m");
  EXPECT_EQ(req.model_version, 2);
  EXPECT_EQ(req.id, "req-1");
  ASSERT_EQ(req.inputs.size(), 2u);
  EXPECT_EQ(req.inputs[0].data_type, DataType::kFp32);
  EXPECT_EQ(req.inputs[0].shape, (Shape{1, 2}));
  EXPECT_EQ(req.inputs[0].data.data(), m->raw_input_contents(0).data());  // no copy
  EXPECT_EQ(As<float>(req.inputs[0].data), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(req.inputs[1].data.size(), 3u);
}

TEST(GrpcCodec, TypedContentsOfEveryDatatype) {
  auto m = Message();
  auto* c = AddInput(m.get(), "bool", "BOOL", {2})->mutable_contents();
  c->add_bool_contents(true);
  c->add_bool_contents(false);
  AddInput(m.get(), "u8", "UINT8", {1})->mutable_contents()->add_uint_contents(200);
  AddInput(m.get(), "u16", "UINT16", {1})->mutable_contents()->add_uint_contents(60000);
  AddInput(m.get(), "u32", "UINT32", {1})->mutable_contents()->add_uint_contents(4000000000u);
  AddInput(m.get(), "u64", "UINT64", {1})->mutable_contents()->add_uint64_contents(1ull << 40);
  AddInput(m.get(), "i8", "INT8", {1})->mutable_contents()->add_int_contents(-100);
  AddInput(m.get(), "i16", "INT16", {1})->mutable_contents()->add_int_contents(-30000);
  AddInput(m.get(), "i32", "INT32", {1})->mutable_contents()->add_int_contents(-7);
  AddInput(m.get(), "i64", "INT64", {1})->mutable_contents()->add_int64_contents(-(1ll << 40));
  AddInput(m.get(), "f32", "FP32", {1})->mutable_contents()->add_fp32_contents(0.25f);
  AddInput(m.get(), "f64", "FP64", {1})->mutable_contents()->add_fp64_contents(-0.5);
  auto* s = AddInput(m.get(), "str", "BYTES", {2})->mutable_contents();
  s->add_bytes_contents("ab");
  s->add_bytes_contents("");
  auto r = DecodeModelInferRequest(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto& in = (*r)->inputs;
  ASSERT_EQ(in.size(), 12u);
  EXPECT_EQ(As<uint8_t>(in[0].data), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(As<uint8_t>(in[1].data), (std::vector<uint8_t>{200}));
  EXPECT_EQ(As<uint16_t>(in[2].data), (std::vector<uint16_t>{60000}));
  EXPECT_EQ(As<uint32_t>(in[3].data), (std::vector<uint32_t>{4000000000u}));
  EXPECT_EQ(As<uint64_t>(in[4].data), (std::vector<uint64_t>{1ull << 40}));
  EXPECT_EQ(As<int8_t>(in[5].data), (std::vector<int8_t>{-100}));
  EXPECT_EQ(As<int16_t>(in[6].data), (std::vector<int16_t>{-30000}));
  EXPECT_EQ(As<int32_t>(in[7].data), (std::vector<int32_t>{-7}));
  EXPECT_EQ(As<int64_t>(in[8].data), (std::vector<int64_t>{-(1ll << 40)}));
  EXPECT_EQ(As<float>(in[9].data), (std::vector<float>{0.25f}));
  EXPECT_EQ(As<double>(in[10].data), (std::vector<double>{-0.5}));
  EXPECT_EQ(std::string(in[11].data.data(), in[11].data.size()),
            std::string("\x02\0\0\0ab\0\0\0\0", 10));
}

TEST(GrpcCodec, RejectsBothRawAndContents) {
  auto m = Message();
  AddInput(m.get(), "a", "INT32", {1})->mutable_contents()->add_int_contents(1);
  m->add_raw_input_contents(std::string(4, '\0'));
  auto r = DecodeModelInferRequest(m);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "contents field must not be specified when using raw_input_contents for 'a' for "
            "model 'm'");
}

TEST(GrpcCodec, RejectsRepeatedTensorNamesWithTritonsText) {
  auto m = Message();
  AddInput(m.get(), "a", "INT32", {1});
  AddInput(m.get(), "a", "INT32", {1});
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), "input 'a' already exists in request");
  m = Message();
  AddInput(m.get(), "a", "INT32", {1});
  m->add_outputs()->set_name("o");
  m->add_outputs()->set_name("o");
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), "output 'o' already exists in request");
}

TEST(GrpcCodec, RejectsRawCountMismatch) {
  auto m = Message();
  AddInput(m.get(), "a", "INT32", {1});
  AddInput(m.get(), "b", "INT32", {1});
  m->add_raw_input_contents(std::string(4, '\0'));
  auto r = DecodeModelInferRequest(m);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("expected 2 inputs but got 1 raw_input_contents"));
}

TEST(GrpcCodec, RejectsUnknownDatatypeAndWrongContentsField) {
  auto m = Message();
  AddInput(m.get(), "a", "FLOAT", {1});
  EXPECT_THAT(DecodeModelInferRequest(m).status().message(), HasSubstr("invalid datatype"));
  m = Message();
  AddInput(m.get(), "a", "FP32", {1})->mutable_contents()->add_int_contents(1);
  auto r = DecodeModelInferRequest(m);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message(),
            "unexpected explicit tensor data for input tensor 'a' for model 'm' of type 'INT32', "
            "expected datatype 'FP32'");
  m = Message();
  AddInput(m.get(), "a", "FP16", {1})->mutable_contents()->add_fp32_contents(1);
  EXPECT_THAT(DecodeModelInferRequest(m).status().message(), HasSubstr("raw_input_contents"));
}

TEST(GrpcCodec, CarriesParametersAndRequestedOutputs) {
  auto m = Message();
  (*m->mutable_parameters())["b"].set_bool_param(true);
  (*m->mutable_parameters())["i"].set_int64_param(-3);
  (*m->mutable_parameters())["u"].set_uint64_param(7);
  (*m->mutable_parameters())["d"].set_double_param(0.5);
  (*m->mutable_parameters())["s"].set_string_param("x");
  auto* in = AddInput(m.get(), "a", "INT32", {1});
  (*in->mutable_parameters())["tp"].set_int64_param(1);
  in->mutable_contents()->add_int_contents(1);
  auto* out = m->add_outputs();
  out->set_name("o");
  (*out->mutable_parameters())["classification"].set_int64_param(2);
  auto r = DecodeModelInferRequest(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Parameters& p = (*r)->parameters;
  EXPECT_EQ(p.size(), 5u);
  EXPECT_EQ(GetBool(p, "b"), true);
  EXPECT_EQ(GetInt(p, "i"), -3);
  EXPECT_EQ(GetInt(p, "u"), 7);
  EXPECT_EQ(std::get<double>(*p.Find("d")), 0.5);
  EXPECT_EQ(std::get<std::string>(*p.Find("s")), "x");
  EXPECT_EQ(GetInt((*r)->inputs[0].parameters, "tp"), 1);
  ASSERT_EQ((*r)->outputs.size(), 1u);
  EXPECT_EQ((*r)->outputs[0].name, "o");
  EXPECT_EQ(GetInt((*r)->outputs[0].parameters, "classification"), 2);
}

TEST(GrpcCodec, RejectsReservedAndEmptyParameters) {
  auto m = Message();
  (*m->mutable_parameters())["triton_x"].set_bool_param(true);
  EXPECT_THAT(DecodeModelInferRequest(m).status().message(), HasSubstr("reserved"));
  m = Message();
  (*m->mutable_parameters())["empty"];
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(),
            "invalid value type for 'empty' parameter, expected int64_param, bool_param, or "
            "string_param.");
}

TEST(GrpcCodec, SchedulePolicyParametersAreTyped) {
  auto m = Message();
  (*m->mutable_parameters())["priority"].set_uint64_param(2);
  (*m->mutable_parameters())["timeout"].set_int64_param(100);
  ASSERT_TRUE(DecodeModelInferRequest(m).ok());
  m = Message();
  (*m->mutable_parameters())["priority"].set_int64_param(-1);
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(),
            "invalid value for 'priority', expected value >= 0.");
  m = Message();
  (*m->mutable_parameters())["priority"].set_string_param("1");
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(),
            "invalid value type for 'priority' parameter, expected int64_param or uint64_param.");
  m = Message();
  (*m->mutable_parameters())["timeout"].set_uint64_param(5);
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(),
            "invalid value type for 'timeout' parameter, expected int64_param.");
  m = Message();
  (*m->mutable_parameters())["timeout"].set_int64_param(-5);
  EXPECT_EQ(DecodeModelInferRequest(m).status().code(), StatusCode::kInvalidArgument);
}

// Same rule and text as HTTP: a numeric sequence ID is a non-negative integer.
TEST(GrpcCodec, NegativeSequenceIdIsRefused) {
  auto m = Message();
  (*m->mutable_parameters())["sequence_id"].set_int64_param(-7);
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), InvalidSequenceId().message());
  m = Message();
  (*m->mutable_parameters())["sequence_id"].set_int64_param(7);
  EXPECT_TRUE(DecodeModelInferRequest(m).ok());
}

TEST(GrpcCodec, CountsAreCapped) {
  auto m = Message();
  for (size_t i = 0; i <= kMaxRequestParameters; ++i) {
    (*m->mutable_parameters())["p" + std::to_string(i)].set_int64_param(1);
  }
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), TooManyRequestParameters().message());
  m = Message();
  auto* in = AddInput(m.get(), "x", "FP32", {1});
  for (size_t i = 0; i <= kMaxTensorParameters; ++i) {
    (*in->mutable_parameters())["p" + std::to_string(i)].set_int64_param(1);
  }
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), TooManyInputParameters().message());
  m = Message();
  for (size_t i = 0; i <= kMaxRequestInputs; ++i) AddInput(m.get(), "x", "FP32", {1});
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), TooManyInputs().message());
  m = Message();
  for (size_t i = 0; i <= kMaxRequestOutputs; ++i) m->add_outputs()->set_name("o");
  EXPECT_EQ(DecodeModelInferRequest(m).status().message(), TooManyOutputs().message());
}

TEST(GrpcCodec, LongNamesAreTruncatedInErrors) {
  auto m = Message();
  AddInput(m.get(), std::string(10000, 'n'), std::string(10000, 'T'), {1});
  const std::string msg = DecodeModelInferRequest(m).status().message();
  EXPECT_LT(msg.size(), 400u) << msg;
  EXPECT_THAT(msg, HasSubstr("... (10000 bytes)"));
}

TEST(GrpcCodec, EncodesResponseInOrderMovingData) {
  InferenceResponse response;
  response.model_name = "m";
  response.model_version = 3;
  response.id = "x";
  response.parameters.Set("p", int64_t{4});
  response.outputs.push_back({"o1", DataType::kInt32, {1, 2}, std::string(8, '\x01')});
  response.outputs.push_back({"o0", DataType::kBytes, {1}, std::string("\x01\0\0\0z", 5)});
  inference::ModelInferResponse out;
  EncodeModelInferResponse(response, &out);
  EXPECT_EQ(out.model_name(), "m");
  EXPECT_EQ(out.model_version(), "3");
  EXPECT_EQ(out.id(), "x");
  EXPECT_EQ(out.parameters().at("p").int64_param(), 4);
  ASSERT_EQ(out.outputs_size(), 2);
  ASSERT_EQ(out.raw_output_contents_size(), 2);
  EXPECT_EQ(out.outputs(0).name(), "o1");
  EXPECT_EQ(out.outputs(0).datatype(), "INT32");
  EXPECT_THAT(out.outputs(0).shape(), ::testing::ElementsAre(1, 2));
  EXPECT_EQ(out.raw_output_contents(0), std::string(8, '\x01'));
  EXPECT_EQ(out.outputs(1).datatype(), "BYTES");
  EXPECT_EQ(out.raw_output_contents(1), std::string("\x01\0\0\0z", 5));
  EXPECT_TRUE(response.outputs[0].data.empty());  // moved, not copied
}

TEST(GrpcCodec, ParameterRoundTrip) {
  for (const ParameterValue& v :
       {ParameterValue(true), ParameterValue(int64_t{-1}), ParameterValue(uint64_t{2}),
        ParameterValue(1.25), ParameterValue(std::string("s"))}) {
    inference::InferParameter p;
    ParameterToProto(v, &p);
    auto back = ParameterFromProto("k", p);
    ASSERT_TRUE(back.ok());
    EXPECT_EQ(*back, v);
  }
}

}  // namespace
}  // namespace nereid
