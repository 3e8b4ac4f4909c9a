#include "frontends/http/repository_request_codec.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(RepositoryRequestCodecTest, EmptyBodiesMeanNoOptions) {
  EXPECT_EQ(DecodeRepositoryIndexRequest("").value(), false);
  EXPECT_EQ(DecodeModelUnloadRequest(" \r\n").value(), false);
  auto load = DecodeModelLoadRequest("{}");
  ASSERT_TRUE(load.ok());
  EXPECT_FALSE(load->config_json.has_value());
  EXPECT_TRUE(load->files.empty());
}

TEST(RepositoryRequestCodecTest, DecodesEachRequest) {
  EXPECT_EQ(DecodeRepositoryIndexRequest(R"({"ready": true})").value(), true);
  EXPECT_EQ(DecodeModelUnloadRequest(R"({"parameters": {"unload_dependents": true}})").value(),
            true);
  auto load = DecodeModelLoadRequest(
      R"({"parameters": {"config": "{\"backend\":\"onnxruntime\"}", "file:1/model.onnx": "AAEC"}})");
  ASSERT_TRUE(load.ok()) << load.status().message();
  EXPECT_EQ(*load->config_json, R"({"backend":"onnxruntime"})");
  ASSERT_EQ(load->files.size(), 1u);
  EXPECT_EQ(load->files[0].first, "1/model.onnx");
  EXPECT_EQ(load->files[0].second, std::string("\x00\x01\x02", 3));
}

TEST(RepositoryRequestCodecTest, RefusesMalformedBodiesWithTritonsMessages) {
  EXPECT_EQ(DecodeRepositoryIndexRequest("{").status().message(),
            "failed to parse the request JSON buffer: offset 1");
  EXPECT_EQ(DecodeRepositoryIndexRequest("[]").status().message(),
            "the request body must be a JSON object");
  EXPECT_EQ(DecodeRepositoryIndexRequest(R"({"ready": 1})").status().message(),
            "Invalid value for 'ready': expected a boolean");
  EXPECT_EQ(DecodeModelLoadRequest(R"({"parameters": 3})").status().message(),
            "Unable to parse 'parameters'");
  EXPECT_EQ(DecodeModelLoadRequest(R"({"parameters": {"x": 1.5}})").status().message(),
            "Unrecognized load parameter 'x' with type 'DOUBLE'");
  EXPECT_EQ(DecodeModelLoadRequest(R"({"parameters": {"file:a": "!!"}})").status().message(),
            "Load parameter 'file:a' is not valid base64");
  EXPECT_EQ(DecodeModelLoadRequest(R"({"parameters": {"config": {}}})").status().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(DecodeModelUnloadRequest(R"({"parameters": {"force": true}})").status().message(),
            "Unrecognized unload parameter 'force' with type 'BOOL'");
  EXPECT_EQ(DecodeModelUnloadRequest(R"({"parameters": {"unload_dependents": "yes"}})")
                .status()
                .message(),
            "Unable to parse 'unload_dependents'");
}

}  // namespace
}  // namespace nereid
