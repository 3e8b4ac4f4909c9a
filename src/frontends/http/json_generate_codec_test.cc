#include "frontends/http/json_generate_codec.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace nereid {
namespace {

std::vector<GenerateInputSpec> Specs() {
  return {{"TEXT", DataType::kBytes, {-1}},
          {"COUNT", DataType::kInt32, {1}},
          {"FLAG", DataType::kBool, {1}},
          {"X", DataType::kFp32, {-1, 2}},
          {"U", DataType::kUint8, {-1, -1}}};
}

StatusOr<std::unique_ptr<InferenceRequest>> Decode(std::string_view body) {
  return DecodeGenerateRequest(body, Specs(), "m", 2);
}

std::string ErrorOf(std::string_view body) {
  auto r = Decode(body);
  EXPECT_FALSE(r.ok()) << body;
  return r.ok() ? "" : r.status().message();
}

const InferInput& Input(const InferenceRequest& r, std::string_view name) {
  for (const InferInput& in : r.inputs) {
    if (in.name == name) return in;
  }
  ADD_FAILURE() << "no input " << name;
  return r.inputs.front();
}

TEST(GenerateCodecTest, InputsAndParametersByTritonsRules) {
  auto r = Decode(R"({"TEXT":"hi","COUNT":7,"X":[1,2,3,4],"U":[1,2,3],"temperature":0.5,"n":3,)"
                  R"("s":"x","b":true,"parameters":{"FLAG":true,"top_k":5}})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const InferenceRequest& req = **r;
  EXPECT_EQ(req.model_name, "m");
  EXPECT_EQ(req.model_version, 2);
  ASSERT_EQ(req.inputs.size(), 5u);
  EXPECT_EQ(Input(req, "TEXT").shape, Shape({1}));
  EXPECT_EQ(std::string(Input(req, "TEXT").data.data(), Input(req, "TEXT").data.size()),
            std::string("\x02\x00\x00\x00hi", 6));
  EXPECT_EQ(Input(req, "COUNT").shape, Shape({1}));
  int32_t count = 0;
  std::memcpy(&count, Input(req, "COUNT").data.data(), 4);
  EXPECT_EQ(count, 7);
  EXPECT_EQ(Input(req, "X").shape, Shape({2, 2}));  // the innermost fixed 2 divides 4
  EXPECT_EQ(Input(req, "U").shape, Shape({1, 3}));  // innermost -1 takes all, the other 1
  EXPECT_EQ(Input(req, "FLAG").shape, Shape({1}));  // an input named inside "parameters"
  EXPECT_EQ(GetInt(req.parameters, "n"), 3);
  EXPECT_EQ(GetInt(req.parameters, "top_k"), 5);
  EXPECT_EQ(GetBool(req.parameters, "b"), true);
  ASSERT_NE(req.parameters.Find("temperature"), nullptr);
  EXPECT_EQ(std::get<double>(*req.parameters.Find("temperature")), 0.5);
  EXPECT_EQ(std::get<std::string>(*req.parameters.Find("s")), "x");
}

TEST(GenerateCodecTest, ErrorsCarryTritonsTexts) {
  EXPECT_EQ(ErrorOf(R"({"TEXT":1})"), "attempt to access JSON non-string as string");
  EXPECT_EQ(ErrorOf(R"({"FLAG":"true"})"), "attempt to access JSON non-boolean as boolean");
  EXPECT_EQ(ErrorOf(R"({"COUNT":1.5})"),
            "attempt to access JSON non-signed-integer as signed-integer");
  EXPECT_EQ(ErrorOf(R"({"U":[-1]})"),
            "attempt to access JSON non-unsigned-integer as unsigned-integer");
  EXPECT_EQ(ErrorOf(R"({"X":["a","b"]})"), "attempt to access JSON non-number as double");
  EXPECT_EQ(ErrorOf(R"({"COUNT":1,"COUNT":2})"), "input 'COUNT' already exists in request");
  EXPECT_EQ(ErrorOf(R"({"X":[1,2,3]})"),
            "The schema can not convert input 'X' to tensor with proper shape");
  EXPECT_EQ(ErrorOf(R"({"COUNT":[]})"),
            "The schema can not convert input 'COUNT' to tensor with proper shape");
  EXPECT_EQ(ErrorOf(R"({"COUNT":[[1,2]]})"), "Shape does not match true shape of 'data' field");
  EXPECT_EQ(ErrorOf(R"({"p":{"a":1}})"),
            "parameter 'p' has invalid type. It should be either 'int', 'bool', or 'string'.");
  EXPECT_EQ(ErrorOf(R"({"parameters":1})"),
            "Expected JSON object for keyword: 'parameters': attempt to access JSON non-object as "
            "object");
  EXPECT_EQ(ErrorOf(R"({"parameters":{"nested":{"twice":1}}})"),
            "Converting keyword: 'parameters': parameter 'nested' has invalid type. It should be "
            "either 'int', 'bool', or 'string'.");
  EXPECT_EQ(ErrorOf("[]"), "attempt to access JSON non-object as object");
  EXPECT_EQ(ErrorOf("{").rfind("failed to parse the request JSON buffer: ", 0), 0u);
  EXPECT_EQ(ErrorOf(R"({"COUNT":4000000000})").rfind("input 'COUNT': ", 0), 0u);
  const std::string deep = R"({"COUNT":)" + std::string(40, '[') + "1" + std::string(40, ']') + "}";
  EXPECT_EQ(ErrorOf(deep), "input 'COUNT': arrays nested more than 32 deep are not supported");
  // A body far deeper than any stack: parsed iteratively, refused without a crash.
  const std::string deeper =
      R"({"COUNT":)" + std::string(200000, '[') + std::string(200000, ']') + "}";
  EXPECT_EQ(ErrorOf(deeper), "input 'COUNT': arrays nested more than 32 deep are not supported");
}

TEST(GenerateCodecTest, ParametersKeywordMayNotNameAnInput) {
  std::vector<GenerateInputSpec> specs = {{"parameters", DataType::kInt32, {1}}};
  auto r = DecodeGenerateRequest(R"({"parameters":{}})", specs, "m", -1);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Keyword 'parameters' for nested schema also given as input tensor name");
}

TEST(GenerateCodecTest, ResponseKeysInByteOrderScalarsUnwrapped) {
  InferenceResponse r;
  r.model_name = "m";
  r.model_version = 4;
  r.id = "req";
  r.parameters.Set("zeta", int64_t{3});
  r.parameters.Set("model_name", std::string("clash"));  // the reserved key wins
  InferOutput one{"OUT", DataType::kInt32, {1}, std::string("\x05\x00\x00\x00", 4)};
  InferOutput two{
      "A", DataType::kBytes, {2}, std::string("\x01\x00\x00\x00x\x01\x00\x00\x00y", 10)};
  r.outputs.push_back(one);
  r.outputs.push_back(two);
  auto json = EncodeGenerateResponse(r);
  ASSERT_TRUE(json.ok()) << json.status().message();
  EXPECT_EQ(*json,
            R"({"A":["x","y"],"OUT":5,"id":"req","model_name":"m","model_version":"4","zeta":3})");
  EXPECT_EQ(SseEvent(*json), "data: " + *json + "\n\n");
}

TEST(GenerateCodecTest, ResponseWithMismatchedDataIsInternal) {
  InferenceResponse r;
  r.model_name = "m";
  r.outputs.push_back({"OUT", DataType::kInt32, {3}, std::string(4, '\0')});
  auto json = EncodeGenerateResponse(r);
  ASSERT_FALSE(json.ok());
  EXPECT_EQ(json.status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace nereid
