#include "perf_request.h"

#include <gtest/gtest.h>

#include <cstring>

namespace nereid::perf {
namespace {

ModelMetadata Simple() {
  return {{{"INPUT0", "INT32", {-1, 4}}, {"INPUT1", "FP32", {2}}}, {{"OUTPUT0", "INT32", {-1, 4}}}};
}

TEST(PerfRequest, ZeroInputsTakeShapesFromMetadata) {
  PerfOptions o;
  auto in = MakeInputs(Simple(), o, nullptr);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->size(), 2u);
  EXPECT_EQ((*in)[0].shape, (std::vector<int64_t>{1, 4}));  // -1 becomes 1
  EXPECT_EQ((*in)[0].raw, std::string(16, '\0'));
  EXPECT_EQ((*in)[1].raw.size(), 8u);
}

TEST(PerfRequest, ShapeFlagAndRandomData) {
  PerfOptions o;
  o.input_data = "random";
  o.shapes["INPUT0"] = {3, 4};
  auto in = MakeInputs(Simple(), o, nullptr);
  ASSERT_TRUE(in.ok());
  EXPECT_EQ((*in)[0].raw.size(), 48u);
  EXPECT_NE((*in)[0].raw, std::string(48, '\0'));
}

TEST(PerfRequest, FileDataAndItsErrors) {
  PerfOptions o;
  std::map<std::string, FileInput> file;
  file["INPUT0"].numbers = {1, 2, 3, 4};
  file["INPUT1"].numbers = {0.5, 1.5};
  auto in = MakeInputs(Simple(), o, &file);
  ASSERT_TRUE(in.ok()) << in.status().message();
  int32_t third;
  std::memcpy(&third, (*in)[0].raw.data() + 8, 4);
  EXPECT_EQ(third, 3);
  file["INPUT1"].numbers = {1};
  EXPECT_FALSE(MakeInputs(Simple(), o, &file).ok());  // 1 element, shape needs 2
  file.erase("INPUT1");
  EXPECT_FALSE(MakeInputs(Simple(), o, &file).ok());  // no values for INPUT1
}

TEST(PerfRequest, BytesInputs) {
  PerfOptions o;
  o.string_length = 3;
  ModelMetadata md{{{"TEXT", "BYTES", {2}}}, {}};
  auto in = MakeInputs(md, o, nullptr);
  ASSERT_TRUE(in.ok());
  const std::string element(
      "\3\0\0\0"
      "000",
      7);
  EXPECT_EQ((*in)[0].raw, element + element);
  EXPECT_EQ((*in)[0].raw.size(), 14u);
  EXPECT_EQ((*in)[0].strings, (std::vector<std::string>{"000", "000"}));
}

TEST(PerfRequest, JsonBody) {
  PerfOptions o;
  auto in = MakeInputs(Simple(), o, nullptr);
  ASSERT_TRUE(in.ok());
  size_t header = 99;
  auto body = HttpInferBody(*in, false, &header);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(header, 0u);
  EXPECT_EQ(*body,
            R"({"inputs":[{"name":"INPUT0","shape":[1,4],"datatype":"INT32","data":[0,0,0,0]},)"
            R"({"name":"INPUT1","shape":[2],"datatype":"FP32","data":[0.0,0.0]}]})");
  std::string req = HttpInferRequest("h", ModelPath("simple", "2"), *body, 0);
  EXPECT_TRUE(req.starts_with("POST /v2/models/simple/versions/2/infer HTTP/1.1\r\n"));
  EXPECT_NE(req.find("Content-Length: " + std::to_string(body->size()) + "\r\n\r\n{"),
            std::string::npos);
}

TEST(PerfRequest, BinaryBody) {
  PerfOptions o;
  auto in = MakeInputs(Simple(), o, nullptr);
  ASSERT_TRUE(in.ok());
  size_t header = 0;
  auto body = HttpInferBody(*in, true, &header);
  ASSERT_TRUE(body.ok());
  EXPECT_EQ(body->size(), header + 24);
  std::string json = body->substr(0, header);
  EXPECT_NE(json.find(R"("parameters":{"binary_data_size":16})"), std::string::npos);
  EXPECT_NE(json.find(R"("parameters":{"binary_data_output":true})"), std::string::npos);
  std::string req = HttpInferRequest("h", ModelPath("m", ""), *body, header);
  EXPECT_NE(req.find("Inference-Header-Content-Length: " + std::to_string(header)),
            std::string::npos);
}

TEST(PerfRequest, Fp16HasNoJsonForm) {
  PerfOptions o;
  ModelMetadata md{{{"H", "FP16", {2}}}, {}};
  auto in = MakeInputs(md, o, nullptr);
  ASSERT_TRUE(in.ok());
  size_t header = 0;
  EXPECT_FALSE(HttpInferBody(*in, false, &header).ok());
  EXPECT_TRUE(HttpInferBody(*in, true, &header).ok());
  ModelMetadata bad{{{"X", "COMPLEX", {1}}}, {}};
  EXPECT_FALSE(MakeInputs(bad, o, nullptr).ok());
}

}  // namespace
}  // namespace nereid::perf
