#include "frontends/http/binary_data_codec.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/tensor/bytes_tensor.h"
#include "frontends/http/json_request_codec.h"

namespace nereid {
namespace {

std::string Raw(const InferInput& in) { return std::string(in.data.data(), in.data.size()); }

// A request whose single input `x` comes from the binary tail.
StatusOr<DecodedInferRequest> DecodeBinary(const std::string& datatype, const std::string& shape,
                                           size_t declared_size, const std::string& tail) {
  const std::string json = R"({"inputs":[{"name":"x","datatype":")" + datatype + R"(","shape":)" +
                           shape + R"(,"parameters":{"binary_data_size":)" +
                           std::to_string(declared_size) + "}}]}";
  auto body = std::make_shared<const std::string>(json + tail);
  return DecodeInferRequest(body, json.size(), "m", 2);
}

std::string ErrorOf(const StatusOr<DecodedInferRequest>& r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

TEST(InferenceHeaderLengthTest, Parses) {
  EXPECT_EQ(*ParseInferenceHeaderLength("12", 20), 12u);
  EXPECT_EQ(*ParseInferenceHeaderLength(" 20 ", 20), 20u);
  EXPECT_EQ(*ParseInferenceHeaderLength("0", 20), 0u);
  EXPECT_EQ(ParseInferenceHeaderLength("abc", 20).status().message(),
            "Unable to parse Inference-Header-Content-Length, got: abc");
  EXPECT_FALSE(ParseInferenceHeaderLength("", 20).ok());
  EXPECT_FALSE(ParseInferenceHeaderLength("1x", 20).ok());
  EXPECT_FALSE(ParseInferenceHeaderLength("99999999999999999999999", 20).ok());
  EXPECT_EQ(ParseInferenceHeaderLength("21", 20).status().message(),
            "inference header size should be in range (0, 20), got: 21");
  EXPECT_EQ(ParseInferenceHeaderLength("-1", 20).status().message(),
            "inference header size should be in range (0, 20), got: -1");
}

TEST(BinaryDataCodecTest, EveryFixedSizeDatatype) {
  for (DataType t : kAllDataTypes) {
    if (t == DataType::kBytes) continue;
    const size_t size = 6 * DataTypeByteSize(t);
    std::string tail(size, '\0');
    for (size_t i = 0; i < size; ++i) tail[i] = static_cast<char>(i * 7 + 1);
    const std::string name(DataTypeWireName(t));
    auto r = DecodeBinary(name, "[2,3]", size, tail);
    ASSERT_TRUE(r.ok()) << name << ": " << r.status().message();
    EXPECT_EQ(r->request->inputs[0].data_type, t);
    EXPECT_EQ(Raw(r->request->inputs[0]), tail) << name;
    EXPECT_EQ(r->request->model_version, 2);
    // Declared size disagreeing with the shape.
    const std::string e = ErrorOf(DecodeBinary(name, "[2,3]", size - 1, tail.substr(1)));
    EXPECT_EQ(e, "unexpected total byte size " + std::to_string(size - 1) +
                     " for input 'x', expecting " + std::to_string(size))
        << name;
  }
}

TEST(BinaryDataCodecTest, BytesElementsAreValidated) {
  std::string tail;
  AppendBytesElement("hello", &tail);
  AppendBytesElement("", &tail);
  auto r = DecodeBinary("BYTES", "[2]", tail.size(), tail);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Raw(r->request->inputs[0]), tail);
  // Element count differs from the shape.
  EXPECT_NE(ErrorOf(DecodeBinary("BYTES", "[3]", tail.size(), tail)).find("expected 3 string"),
            std::string::npos);
  // A length prefix running past the end of the tensor.
  std::string bad("\x10\0\0\0abc", 7);
  EXPECT_NE(ErrorOf(DecodeBinary("BYTES", "[1]", bad.size(), bad)).find("past the end"),
            std::string::npos);
  // A truncated length prefix.
  EXPECT_FALSE(DecodeBinary("BYTES", "[1]", 2, std::string("\1\0", 2)).ok());
}

TEST(BinaryDataCodecTest, TailMustBeConsumedExactly) {
  EXPECT_EQ(ErrorOf(DecodeBinary("INT32", "[2]", 8, std::string(4, 'a'))),
            "unexpected size for input 'x', expecting 4 additional bytes for model 'm'");
  EXPECT_EQ(ErrorOf(DecodeBinary("INT32", "[2]", 8, std::string(9, 'a'))),
            "unexpected additional input data for model 'm'");
  // Binary inputs without an Inference-Header-Content-Length: the body is all JSON.
  const std::string json =
      R"({"inputs":[{"name":"x","datatype":"INT32","shape":[1],"parameters":{"binary_data_size":4}}]})";
  auto body = std::make_shared<const std::string>(json);
  EXPECT_FALSE(DecodeInferRequest(body, body->size(), "m", -1).ok());
  // Zero-byte binary input.
  auto r = DecodeBinary("FP32", "[0]", 0, "");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->request->inputs[0].data.empty());
}

TEST(BinaryDataCodecTest, MixedJsonAndBinaryInputs) {
  const std::string json =
      R"({"inputs":[{"name":"a","datatype":"INT8","shape":[2],"parameters":{"binary_data_size":2}},)"
      R"({"name":"b","datatype":"INT8","shape":[1],"data":[5]},)"
      R"({"name":"c","datatype":"INT8","shape":[1],"parameters":{"binary_data_size":1}}]})";
  auto body = std::make_shared<const std::string>(json + "\x01\x02\x03");
  auto r = DecodeInferRequest(body, json.size(), "m", -1);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(Raw(r->request->inputs[0]), "\x01\x02");
  EXPECT_EQ(Raw(r->request->inputs[1]), "\x05");
  EXPECT_EQ(Raw(r->request->inputs[2]), "\x03");
}

RawInputSpec Spec(DataType type, Shape dims, bool batching) {
  RawInputSpec spec;
  spec.model_name = "m";
  spec.input_count = 1;
  spec.name = "INPUT0";
  spec.data_type = type;
  spec.dims = std::move(dims);
  spec.batching = batching;
  return spec;
}

TEST(RawBinaryRequestTest, DeducesTheVariableDimension) {
  auto body = std::make_shared<const std::string>(std::string(32, '\0'));
  auto r = DecodeRawInferRequest(body, Spec(DataType::kFp32, {-1}, false));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const InferInput& in = r->request->inputs[0];
  EXPECT_EQ(in.name, "INPUT0");
  EXPECT_EQ(in.data_type, DataType::kFp32);
  EXPECT_EQ(in.shape, (Shape{8}));
  EXPECT_EQ(in.data.data(), body->data());  // zero copy
  EXPECT_TRUE(r->binary_output_default);    // every output comes back binary
  r = DecodeRawInferRequest(body, Spec(DataType::kFp32, {2, -1}, true));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->request->inputs[0].shape, (Shape{1, 2, 4}));
  r = DecodeRawInferRequest(body, Spec(DataType::kFp32, {8}, true));
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->request->inputs[0].shape, (Shape{1, 8}));
}

TEST(RawBinaryRequestTest, Errors) {
  auto body = std::make_shared<const std::string>(std::string(32, '\0'));
  RawInputSpec two = Spec(DataType::kFp32, {8}, false);
  two.input_count = 2;
  EXPECT_EQ(DecodeRawInferRequest(body, two).status().message(),
            "Raw request must only have 1 input (found 1) to be deduced but got 2 inputs in 'm' "
            "model configuration");
  EXPECT_NE(DecodeRawInferRequest(body, Spec(DataType::kFp32, {-1, -1}, false))
                .status()
                .message()
                .find("more than one variable-sized dimension"),
            std::string::npos);
  EXPECT_EQ(DecodeRawInferRequest(body, Spec(DataType::kFp32, {4}, false)).status().message(),
            "unexpected total byte size 32 for input 'INPUT0', expecting 16");
  EXPECT_FALSE(DecodeRawInferRequest(body, Spec(DataType::kFp32, {-1, 3}, false)).ok());
  for (Shape dims : {Shape{2}, Shape{-1}}) {
    EXPECT_EQ(DecodeRawInferRequest(body, Spec(DataType::kBytes, dims, false)).status().message(),
              "For BYTE datatype raw input 'INPUT0', the model must have input shape [1]");
  }
}

TEST(RawBinaryRequestTest, BytesBodyIsOneElement) {
  auto body = std::make_shared<const std::string>("raw text");
  auto r = DecodeRawInferRequest(body, Spec(DataType::kBytes, {1}, true));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->request->inputs[0].shape, (Shape{1, 1}));
  EXPECT_EQ(Raw(r->request->inputs[0]), std::string("\x08\0\0\0raw text", 12));
}

}  // namespace
}  // namespace nereid
