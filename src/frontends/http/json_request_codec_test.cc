#include "frontends/http/json_request_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "common/error_text.h"
#include "core/request/request_limits.h"
#include "frontends/http/binary_data_codec.h"

namespace nereid {
namespace {

template <typename T>
std::vector<T> Values(const InferInput& in) {
  std::vector<T> v(in.data.size() / sizeof(T));
  std::memcpy(v.data(), in.data.data(), v.size() * sizeof(T));
  return v;
}

std::string Raw(const InferInput& in) { return std::string(in.data.data(), in.data.size()); }

StatusOr<DecodedInferRequest> DecodeBody(std::string body, size_t header_length) {
  auto b = std::make_shared<const std::string>(std::move(body));
  return DecodeInferRequest(b, header_length, "m", -1);
}

StatusOr<DecodedInferRequest> DecodeJson(const std::string& json) {
  return DecodeBody(json, json.size());
}

// One input with the given datatype, shape and JSON data.
StatusOr<DecodedInferRequest> DecodeInput(const std::string& datatype, const std::string& shape,
                                          const std::string& data) {
  return DecodeJson(R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":)" + shape +
                    R"(,"data":)" + data + "}]}");
}

std::string ErrorOf(const StatusOr<DecodedInferRequest>& r) {
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  return r.status().message();
}

TEST(JsonRequestCodecTest, DecodesEveryDatatypeFromJson) {
  auto r = DecodeInput("BOOL", "[3]", "[true,false,true]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Raw(r->request->inputs[0]), std::string("\1\0\1", 3));
  r = DecodeInput("UINT8", "[2]", "[0,255]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>(r->request->inputs[0]), (std::vector<uint8_t>{0, 255}));
  r = DecodeInput("UINT16", "[2]", "[1,65535]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint16_t>(r->request->inputs[0]), (std::vector<uint16_t>{1, 65535}));
  r = DecodeInput("UINT32", "[1]", "[4294967295]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint32_t>(r->request->inputs[0])[0], 4294967295u);
  r = DecodeInput("UINT64", "[1]", "[18446744073709551615]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint64_t>(r->request->inputs[0])[0], std::numeric_limits<uint64_t>::max());
  r = DecodeInput("INT8", "[2]", "[-128,127]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int8_t>(r->request->inputs[0]), (std::vector<int8_t>{-128, 127}));
  r = DecodeInput("INT16", "[2]", "[-32768,32767]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int16_t>(r->request->inputs[0]), (std::vector<int16_t>{-32768, 32767}));
  r = DecodeInput("INT32", "[2]", "[-2147483648,2147483647]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int32_t>(r->request->inputs[0]),
            (std::vector<int32_t>{std::numeric_limits<int32_t>::min(), 2147483647}));
  r = DecodeInput("INT64", "[2]", "[-9223372036854775808,9223372036854775807]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<int64_t>(r->request->inputs[0]),
            (std::vector<int64_t>{std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max()}));
  r = DecodeInput("FP16", "[3]", "[1.5,-2,0]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint16_t>(r->request->inputs[0]), (std::vector<uint16_t>{0x3e00, 0xc000, 0}));
  r = DecodeInput("BF16", "[2]", "[1.5,-2]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint16_t>(r->request->inputs[0]), (std::vector<uint16_t>{0x3fc0, 0xc000}));
  r = DecodeInput("FP32", "[3]", "[0.5,-1.25,3]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<float>(r->request->inputs[0]), (std::vector<float>{0.5f, -1.25f, 3.0f}));
  r = DecodeInput("FP64", "[2]", "[0.1,1e308]");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<double>(r->request->inputs[0]), (std::vector<double>{0.1, 1e308}));
  r = DecodeInput("BYTES", "[2]", R"(["abc",""])");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Raw(r->request->inputs[0]), std::string("\3\0\0\0abc\0\0\0\0", 11));
  EXPECT_EQ(r->request->inputs[0].data_type, DataType::kBytes);
  EXPECT_EQ(r->request->inputs[0].shape, (Shape{2}));
}

TEST(JsonRequestCodecTest, NestedAndFlatDataAreTheSame) {
  auto flat = DecodeInput("INT32", "[2,3]", "[1,2,3,4,5,6]");
  auto nested = DecodeInput("INT32", "[2,3]", "[[1,2,3],[4,5,6]]");
  auto ragged = DecodeInput("INT32", "[2,3]", "[[1],[2,[3,4]],5,[[6]]]");
  ASSERT_TRUE(flat.ok() && nested.ok() && ragged.ok());
  EXPECT_EQ(Raw(flat->request->inputs[0]), Raw(nested->request->inputs[0]));
  EXPECT_EQ(Raw(flat->request->inputs[0]), Raw(ragged->request->inputs[0]));
}

TEST(JsonRequestCodecTest, KeysInAnyOrder) {
  auto r = DecodeJson(
      R"({"outputs":[{"name":"y"}],"inputs":[{"data":[[1,2]],"shape":[1,2],)"
      R"("datatype":"FP32","name":"x","extra":{"a":[1,{"b":2}]}}],"id":"7","model_name":"m"})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->request->id, "7");
  EXPECT_EQ(r->request->model_name, "m");
  EXPECT_EQ(Values<float>(r->request->inputs[0]), (std::vector<float>{1, 2}));
  ASSERT_EQ(r->request->outputs.size(), 1u);
  EXPECT_EQ(r->request->outputs[0].name, "y");
}

TEST(JsonRequestCodecTest, CountMismatchUsesTritonsMessage) {
  const std::string msg = "Unable to parse 'data': Shape does not match true shape of 'data' field";
  EXPECT_EQ(ErrorOf(DecodeInput("INT32", "[2,2]", "[1,2,3]")), msg);
  EXPECT_EQ(ErrorOf(DecodeInput("INT32", "[2]", "[1,2,3]")), msg);
  EXPECT_EQ(ErrorOf(DecodeInput("BYTES", "[1]", R"(["a","b"])")), msg);
  EXPECT_TRUE(DecodeInput("INT32", "[0]", "[]").ok());
}

TEST(JsonRequestCodecTest, ValuesMustFitTheDatatype) {
  EXPECT_NE(ErrorOf(DecodeInput("UINT8", "[1]", "[256]")).find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf(DecodeInput("INT8", "[1]", "[-129]")).find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf(DecodeInput("UINT32", "[1]", "[-1]")).find("out of range"), std::string::npos);
  EXPECT_NE(ErrorOf(DecodeInput("INT64", "[1]", "[9223372036854775808]")).find("out of range"),
            std::string::npos);
  EXPECT_FALSE(DecodeInput("INT32", "[1]", "[1.5]").ok());
  EXPECT_FALSE(DecodeInput("BOOL", "[1]", "[1]").ok());
  EXPECT_FALSE(DecodeInput("BYTES", "[1]", "[5]").ok());
  EXPECT_FALSE(DecodeInput("FP32", "[1]", R"(["1.0"])").ok());
  EXPECT_FALSE(DecodeInput("FP32", "[1]", "[null]").ok());
  EXPECT_FALSE(DecodeInput("FP32", "[1]", R"([{"a":1}])").ok());
  EXPECT_FALSE(DecodeInput("FP32", "[1]", "1.0").ok());
  EXPECT_TRUE(DecodeInput("FP32", "[1]", "[7]").ok());  // integers are fine for floats
}

// Found by fuzz/fuzz_json_infer: rapidjson's full-precision conversion of "0." and ~500 zeros read
// far outside a static table and crashed the server. Numbers are now converted with from_chars.
TEST(JsonRequestCodecTest, NumbersRapidjsonCouldNotConvertAreSafe) {
  const std::string zeros = "0." + std::string(495, '0');
  EXPECT_NE(ErrorOf(DecodeJson(zeros)), "");  // not an object: refused, not a crash
  auto r =
      DecodeInput("FP64", "[3]", "[" + zeros + ", " + zeros + "1e-2147483600, -" + zeros + "]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto v = Values<double>(r->request->inputs[0]);
  EXPECT_EQ(v, (std::vector<double>{0.0, 0.0, 0.0}));
  EXPECT_TRUE(std::signbit(v[2]));
}

// The conversion is exact (as rapidjson's full precision meant to be): FP64 values round-trip,
// integers stay integers as long as they fit 64 bits, NaN and Infinity are accepted.
TEST(JsonRequestCodecTest, NumbersAreConvertedExactly) {
  auto r = DecodeInput("FP64", "[6]",
                       "[0.1, 1.7976931348623157e308, 4.9406564584124654e-324, "
                       "2.2250738585072014e-308, -0.0, 1e-400]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto v = Values<double>(r->request->inputs[0]);
  EXPECT_EQ(v[0], 0.1);
  EXPECT_EQ(v[1], std::numeric_limits<double>::max());
  EXPECT_EQ(v[2], std::numeric_limits<double>::denorm_min());
  EXPECT_EQ(v[3], std::numeric_limits<double>::min());
  EXPECT_TRUE(std::signbit(v[4]));
  EXPECT_EQ(v[5], 0.0);

  r = DecodeInput("INT64", "[3]", "[-9223372036854775808, 9223372036854775807, -0]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Values<int64_t>(r->request->inputs[0]),
            (std::vector<int64_t>{INT64_MIN, INT64_MAX, 0}));
  r = DecodeInput("UINT64", "[1]", "[18446744073709551615]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Values<uint64_t>(r->request->inputs[0]), (std::vector<uint64_t>{UINT64_MAX}));
  // Beyond 64 bits an integer is a double, as rapidjson reports it: not an INT64.
  EXPECT_NE(ErrorOf(DecodeInput("INT64", "[1]", "[18446744073709551616]")).size(), 0u);

  r = DecodeInput("FP32", "[3]", "[NaN, Infinity, -Inf]");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto f = Values<float>(r->request->inputs[0]);
  EXPECT_TRUE(std::isnan(f[0]));
  EXPECT_EQ(f[1], std::numeric_limits<float>::infinity());
  EXPECT_EQ(f[2], -std::numeric_limits<float>::infinity());
}

TEST(JsonRequestCodecTest, DatatypeAfterDataIsChecked) {
  auto r = DecodeJson(R"({"inputs":[{"name":"x","shape":[2],"data":[1,300],"datatype":"UINT8"}]})");
  EXPECT_NE(ErrorOf(r).find("out of range"), std::string::npos);
  r = DecodeJson(R"({"inputs":[{"name":"x","shape":[2],"data":[1,3],"datatype":"UINT8"}]})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(Values<uint8_t>(r->request->inputs[0]), (std::vector<uint8_t>{1, 3}));
}

TEST(JsonRequestCodecTest, UnknownDatatypeIsNamed) {
  const std::string e = ErrorOf(DecodeInput("FLOAT32", "[1]", "[1]"));
  EXPECT_NE(e.find("'FLOAT32'"), std::string::npos) << e;
  EXPECT_NE(e.find("'x'"), std::string::npos) << e;
}

TEST(JsonRequestCodecTest, MissingOrMistypedFields) {
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[{"shape":[1],"datatype":"FP32","data":[1]}]})")),
            "Unable to parse 'name'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"data":[1]}]})")),
            "Unable to parse 'datatype'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[{"name":"x","datatype":"FP32","data":[1]}]})")),
            "Unable to parse 'shape'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"outputs":[]})")), "Unable to parse 'inputs'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":{}})")), "Unable to parse 'inputs'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"id":5})")), "Unable to parse 'id'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"outputs":[{"parameters":{}}]})")),
            "Unable to parse 'name'");
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[{"name":1}]})")), "Unable to parse 'name'");
}

TEST(JsonRequestCodecTest, ExactlyOneDataSourcePerInput) {
  auto e = ErrorOf(DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32"}]})"));
  EXPECT_NE(e.find("no field is set"), std::string::npos) << e;
  e = ErrorOf(DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],)"
                         R"("parameters":{"binary_data_size":4}}]})"));
  EXPECT_NE(e.find("set 'data' 'binary_data_size'"), std::string::npos) << e;
  // Shared memory inputs pass through with their parameters for the core to resolve.
  auto r =
      DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32",)"
                 R"("parameters":{"shared_memory_region":"r","shared_memory_byte_size":4}}]})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->request->inputs[0].data.empty());
  EXPECT_NE(r->request->inputs[0].parameters.Find("shared_memory_region"), nullptr);
}

TEST(JsonRequestCodecTest, SharedMemoryParametersAsTritonsHttpFrontendReadsThem) {
  auto decode = [](const std::string& params) {
    return DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","parameters":)" +
                      params + "}]}");
  };
  // A byte size left out is 0 (the size check against the tensor then refuses it).
  auto r = decode(R"({"shared_memory_region":"r"})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(GetUint(r->request->inputs[0].parameters, "shared_memory_byte_size"), 0u);
  EXPECT_EQ(ErrorOf(decode(R"({"shared_memory_region":1})")),
            "Unable to parse 'shared_memory_region': attempt to access JSON non-string as string");
  EXPECT_EQ(ErrorOf(decode(R"({"shared_memory_region":"r","shared_memory_offset":-1})")),
            "Unable to parse 'shared_memory_offset': attempt to access JSON non-unsigned-integer "
            "as unsigned-integer");
  EXPECT_EQ(ErrorOf(decode(R"({"shared_memory_region":"r","shared_memory_byte_size":1.5})")),
            "Unable to parse 'shared_memory_byte_size': attempt to access JSON "
            "non-unsigned-integer as unsigned-integer");
  // Without a region they are type-checked, then ignored.
  auto ignored =
      DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],)"
                 R"("parameters":{"shared_memory_offset":4}}],)"
                 R"("outputs":[{"name":"y","parameters":{"shared_memory_byte_size":4}}]})");
  ASSERT_TRUE(ignored.ok()) << ignored.status().message();
  EXPECT_TRUE(ignored->request->inputs[0].parameters.empty());
  EXPECT_TRUE(ignored->request->outputs[0].parameters.empty());
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32",)"
                               R"("data":[1]}],"outputs":[{"name":"y","parameters":)"
                               R"({"shared_memory_offset":"0"}}]})")),
            "Unable to parse 'shared_memory_offset': attempt to access JSON non-unsigned-integer "
            "as unsigned-integer");
}

TEST(JsonRequestCodecTest, DuplicateNamesAreRejected) {
  EXPECT_NE(
      ErrorOf(DecodeJson(R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1]},)"
                         R"({"name":"x","shape":[1],"datatype":"FP32","data":[2]}]})"))
          .find("'x'"),
      std::string::npos);
  EXPECT_NE(
      ErrorOf(DecodeJson(R"({"inputs":[],"outputs":[{"name":"y"},{"name":"y"}]})")).find("'y'"),
      std::string::npos);
}

TEST(JsonRequestCodecTest, ShapesMustBeNonNegativeIntegersWithoutOverflow) {
  EXPECT_EQ(ErrorOf(DecodeInput("FP32", "[2,-5]", "[1]")),
            "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as "
            "unsigned-integer");
  EXPECT_FALSE(DecodeInput("FP32", "[1.0]", "[1]").ok());
  EXPECT_FALSE(DecodeInput("FP32", R"(["1"])", "[1]").ok());
  EXPECT_FALSE(DecodeInput("FP32", "[[1]]", "[1]").ok());
  // Triton's QA (L0_http test_buffer_size_overflow) matches both texts.
  EXPECT_EQ(ErrorOf(DecodeInput("FP32", "[16,1152921504606846978]", "[1]")),
            "Unable to parse 'shape': the shape [16,1152921504606846978] of input 'x' causes total "
            "element count to exceed maximum size of 9223372036854775807");
  EXPECT_EQ(ErrorOf(DecodeInput("FP32", "[4,1152921504606846978]", "[1]")),
            "byte size overflow for input 'x'");
  EXPECT_FALSE(DecodeInput("FP32", "[18446744073709551615]", "[1]").ok());
}

TEST(JsonRequestCodecTest, MalformedJsonReportsRapidJsonErrorAndOffset) {
  const std::string e = ErrorOf(DecodeJson(R"({"inputs":[{"name":"x")"));
  EXPECT_EQ(e.rfind("failed to parse the request JSON buffer: ", 0), 0u) << e;
  EXPECT_NE(e.find(" at 22"), std::string::npos) << e;
  EXPECT_EQ(ErrorOf(DecodeJson("")),
            "failed to parse the request JSON buffer: The document is empty. at 0");
  EXPECT_FALSE(DecodeJson(R"({"inputs":[]} trailing)").ok());
  EXPECT_FALSE(DecodeJson("{'inputs':[]}").ok());
}

TEST(JsonRequestCodecTest, BodyMustBeAnObject) {
  EXPECT_FALSE(DecodeJson("[]").ok());
  EXPECT_FALSE(DecodeJson("5").ok());
  EXPECT_FALSE(DecodeJson(R"("inputs")").ok());
}

std::string Nest(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonRequestCodecTest, NestingDepthIsLimitedTo100) {
  // The root object is level 1, so 99 arrays reach exactly 100.
  EXPECT_TRUE(DecodeJson(R"({"inputs":[],"x":)" + Nest(99) + "}").ok());
  const std::string e = ErrorOf(DecodeJson(R"({"inputs":[],"x":)" + Nest(100) + "}"));
  EXPECT_EQ(e, "JSON nesting depth exceeds maximum allowed limit (100)");
  // Far deeper than any stack could recurse: still a clean error.
  EXPECT_FALSE(DecodeJson(std::string(1000000, '[')).ok());
  EXPECT_FALSE(
      DecodeInput("FP32", "[1]", std::string(200, '[') + "1" + std::string(200, ']')).ok());
}

TEST(JsonRequestCodecTest, Parameters) {
  auto r = DecodeJson(
      R"({"inputs":[{"name":"x","shape":[1],"datatype":"FP32","data":[1],"parameters":{"p":1}}],)"
      R"("parameters":{"b":true,"i":-3,"u":18446744073709551615,"d":0.5,"s":"str",)"
      R"("sequence_id":42,"binary_data_output":true},)"
      R"("outputs":[{"name":"y","parameters":{"binary_data":false,"classification":3}}]})");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Parameters& p = r->request->parameters;
  EXPECT_EQ(GetBool(p, "b"), true);
  EXPECT_EQ(GetInt(p, "i"), -3);
  EXPECT_EQ(std::get<uint64_t>(*p.Find("u")), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(std::get<double>(*p.Find("d")), 0.5);
  EXPECT_EQ(std::get<std::string>(*p.Find("s")), "str");
  EXPECT_EQ(GetInt(p, "sequence_id"), 42);
  EXPECT_EQ(p.Find("binary_data_output"), nullptr);  // consumed by the frontend
  EXPECT_TRUE(r->binary_output_default);
  EXPECT_EQ(GetInt(r->request->inputs[0].parameters, "p"), 1);
  const Parameters& op = r->request->outputs[0].parameters;
  EXPECT_EQ(GetBool(op, "binary_data"), false);
  EXPECT_EQ(GetInt(op, "classification"), 3);
}

TEST(JsonRequestCodecTest, SchedulePolicyParametersMustBeUnsigned) {
  auto ok = DecodeJson(R"({"inputs":[],"parameters":{"priority":2,"timeout":0}})");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(GetUint(ok->request->parameters, "priority"), 2u);
  EXPECT_EQ(GetUint(ok->request->parameters, "timeout"), 0u);
  const std::string kNotUnsigned =
      "': attempt to access JSON non-unsigned-integer as unsigned-integer";
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"priority":-1}})")),
            "Unable to parse 'priority" + kNotUnsigned);
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"timeout":-5}})")),
            "Unable to parse 'timeout" + kNotUnsigned);
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"timeout":"10"}})")),
            "Unable to parse 'timeout" + kNotUnsigned);
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"timeout":1.5}})")),
            "Unable to parse 'timeout" + kNotUnsigned);
}

TEST(JsonRequestCodecTest, BadParameters) {
  EXPECT_NE(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"n":{"a":1}}})")).find("'n'"),
            std::string::npos);
  EXPECT_FALSE(DecodeJson(R"({"inputs":[],"parameters":{"n":[1]}})").ok());
  EXPECT_FALSE(DecodeJson(R"({"inputs":[],"parameters":{"n":null}})").ok());
  EXPECT_FALSE(DecodeJson(R"({"inputs":[],"parameters":[]})").ok());
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"binary_data_output":1}})")),
            "Unable to parse 'binary_data_output'");
  EXPECT_NE(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{"triton_x":1}})")).find("triton_"),
            std::string::npos);
  EXPECT_EQ(ErrorOf(DecodeJson(
                R"({"inputs":[],"outputs":[{"name":"y","parameters":{"binary_data":1}}]})")),
            "Unable to parse 'binary_data'");
  EXPECT_EQ(ErrorOf(DecodeJson(
                R"({"inputs":[],"outputs":[{"name":"y","parameters":{"classification":-1}}]})")),
            "Unable to set 'classification'");
}

// The request of seed 001: UINT32 [2,2] and BOOL [3] sent as binary data after the JSON.
TEST(JsonRequestCodecTest, SeedExampleBinaryRequest) {
  const std::string json = R"({
"model_name" : "mymodel",
"inputs" : [
{
"name" : "input0",
"shape" : [ 2, 2 ],
"datatype" : "UINT32",
"parameters" : {
"binary_data_size" : 16
}
},
{
"name" : "input1",
"shape" : [ 3 ],
"datatype" : "BOOL",
"parameters" : {
"binary_data_size" : 3
}
}
],
"outputs" : [
{
"name" : "output0",
"parameters" : {
"binary_data" : true
}
}
]
})";
  const uint32_t u[4] = {1, 2, 3, 0xdeadbeef};
  std::string body = json;
  body.append(reinterpret_cast<const char*>(u), sizeof(u));
  body.append("\1\0\1", 3);
  auto b = std::make_shared<const std::string>(body);
  // As a client sends it: the header value is a string.
  auto header_length = ParseInferenceHeaderLength(std::to_string(json.size()), b->size());
  ASSERT_TRUE(header_length.ok());
  auto r = DecodeInferRequest(b, *header_length, "mymodel", -1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->request->inputs.size(), 2u);
  const InferInput& in0 = r->request->inputs[0];
  EXPECT_EQ(in0.name, "input0");
  EXPECT_EQ(in0.data_type, DataType::kUint32);
  EXPECT_EQ(in0.shape, (Shape{2, 2}));
  EXPECT_EQ(Values<uint32_t>(in0), (std::vector<uint32_t>{1, 2, 3, 0xdeadbeef}));
  EXPECT_EQ(in0.data.data(), b->data() + json.size());  // a view into the body, not a copy
  EXPECT_EQ(in0.parameters.Find("binary_data_size"), nullptr);
  const InferInput& in1 = r->request->inputs[1];
  EXPECT_EQ(in1.data_type, DataType::kBool);
  EXPECT_EQ(Raw(in1), std::string("\1\0\1", 3));
  EXPECT_EQ(in1.data.data(), b->data() + json.size() + 16);
  ASSERT_EQ(r->request->outputs.size(), 1u);
  EXPECT_EQ(r->request->outputs[0].name, "output0");
  EXPECT_EQ(GetBool(r->request->outputs[0].parameters, "binary_data"), true);
  EXPECT_FALSE(r->binary_output_default);
  // The request keeps the body alive.
  const char* data = in0.data.data();
  b.reset();
  EXPECT_EQ(std::memcmp(data, u, sizeof(u)), 0);
}

// Deterministic mutations of a valid binary request: every outcome must be a clean OK or error.
TEST(JsonRequestCodecTest, SurvivesMutatedInput) {
  const std::string json =
      R"({"id":"1","inputs":[{"name":"a","shape":[2,2],"datatype":"INT16","data":[[1,2],[3,4]]},)"
      R"({"name":"b","shape":[2],"datatype":"BYTES","parameters":{"binary_data_size":10}}],)"
      R"("outputs":[{"name":"o","parameters":{"binary_data":true}}],"parameters":{"p":1.5}})";
  const std::string tail("\1\0\0\0x\1\0\0\0y", 10);
  const std::string_view inserts = "[]{}\",:0-9e\\";
  uint32_t seed = 1;
  auto next = [&seed] { return seed = seed * 1664525u + 1013904223u; };
  int ok = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string body = json + tail;
    const int edits = 1 + static_cast<int>(next() % 4);
    for (int e = 0; e < edits && !body.empty(); ++e) {
      const size_t pos = next() % body.size();
      switch (next() % 3) {
        case 0:
          body[pos] = static_cast<char>(next());
          break;
        case 1:
          body.erase(pos, 1 + next() % 8);
          break;
        default:
          body.insert(pos, 1, inserts[next() % inserts.size()]);
          break;
      }
    }
    auto r = DecodeBody(body, std::min(body.size(), json.size()));
    if (r.ok()) ++ok;
  }
  EXPECT_GT(ok, 0);  // some mutations (e.g. inside strings) stay valid
}

std::string Repeat(const std::string& item, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += (i ? "," : "") + item;
  return out;
}

std::string NumberedParams(size_t n) {
  std::string out = "{";
  for (size_t i = 0; i < n; ++i) {
    out += (i ? "," : "") + std::string("\"p") + std::to_string(i) + "\":1";
  }
  return out + "}";
}

TEST(JsonRequestCodecTest, CountsAreCapped) {
  EXPECT_TRUE(
      DecodeJson(R"({"inputs":[],"parameters":)" + NumberedParams(kMaxRequestParameters) + "}")
          .ok());
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":)" +
                               NumberedParams(kMaxRequestParameters + 1) + "}")),
            TooManyRequestParameters().message());
  // A repeated key replaces its value and does not count twice.
  EXPECT_TRUE(DecodeJson(R"({"inputs":[],"parameters":{)" + Repeat(R"("a":1)", 5000) + "}}").ok());
  const std::string input_params = R"({"inputs":[{"name":"x","datatype":"INT32","shape":[1],)"
                                   R"("data":[1],"parameters":)" +
                                   NumberedParams(kMaxTensorParameters + 1) + "}]}";
  EXPECT_EQ(ErrorOf(DecodeJson(input_params)), TooManyInputParameters().message());
  const std::string output_params = R"({"inputs":[],"outputs":[{"name":"o","parameters":)" +
                                    NumberedParams(kMaxTensorParameters + 1) + "}]}";
  EXPECT_EQ(ErrorOf(DecodeJson(output_params)), TooManyOutputParameters().message());
  std::string inputs;
  for (size_t i = 0; i <= kMaxRequestInputs; ++i) {
    inputs += (i ? "," : "") + std::string(R"({"name":"i)") + std::to_string(i) +
              R"(","datatype":"INT32","shape":[1],"data":[1]})";
  }
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[)" + inputs + "]}")), TooManyInputs().message());
  std::string outputs;
  for (size_t i = 0; i <= kMaxRequestOutputs; ++i) {
    outputs += (i ? "," : "") + std::string(R"({"name":"o)") + std::to_string(i) + R"("})";
  }
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"outputs":[)" + outputs + "]}")),
            TooManyOutputs().message());
}

// Duplicate names are found with a hash set (many distinct names stay linear).
TEST(JsonRequestCodecTest, DuplicateNamesAmongMany) {
  std::string outputs;
  for (int i = 0; i < 2000; ++i) {
    outputs += (i ? "," : "") + std::string(R"({"name":"o)") + std::to_string(i) + R"("})";
  }
  EXPECT_TRUE(DecodeJson(R"({"inputs":[],"outputs":[)" + outputs + "]}").ok());
  EXPECT_EQ(ErrorOf(DecodeJson(R"({"inputs":[],"outputs":[)" + outputs + R"(,{"name":"o7"}]})")),
            "output 'o7' already exists in request");
}

TEST(JsonRequestCodecTest, LongClientTextIsTruncatedInErrors) {
  const std::string name(50000, 'n');
  const std::string dup = R"({"name":")" + name + R"(","datatype":"INT32","shape":[1],"data":[1]})";
  const std::string msg = ErrorOf(DecodeJson(R"({"inputs":[)" + dup + "," + dup + "]}"));
  EXPECT_EQ(msg, "input '" + std::string(kMaxErrorTextLength, 'n') +
                     "... (50000 bytes)' already exists in request");
  const std::string key(3000, 'k');
  EXPECT_LT(ErrorOf(DecodeJson(R"({"inputs":[],"parameters":{")" + key + R"(":null}})")).size(),
            300u);
  const std::string shape = "[" + Repeat("4294967296", 20000) + "]";
  const std::string overflow = ErrorOf(DecodeInput("INT32", shape, "[1]"));
  EXPECT_LT(overflow.size(), 400u) << overflow;
  EXPECT_NE(overflow.find("(20000 dims)"), std::string::npos) << overflow;
}

TEST(JsonRequestCodecTest, FloatingOverflowIsRefused) {
  EXPECT_EQ(ErrorOf(DecodeInput("FP32", "[1]", "[1e39]")),
            "Unable to parse 'data': value 1e+39 is out of range for FP32");
  EXPECT_EQ(ErrorOf(DecodeInput("FP16", "[1]", "[70000]")),
            "Unable to parse 'data': value 70000 is out of range for FP16");
  EXPECT_TRUE(DecodeInput("FP32", "[2]", "[Infinity,-Infinity]").ok());
  EXPECT_EQ(ErrorOf(DecodeInput("FP16", "[1]", "[true]")),
            "Unable to parse 'data': expected a number for datatype FP16, got a boolean");
}

}  // namespace
}  // namespace nereid
