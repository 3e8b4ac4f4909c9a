#include "frontends/http/json_response_codec.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "core/tensor/bytes_tensor.h"

namespace nereid {
namespace {

template <typename T>
std::string Bytes(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), std::data(values), s.size());
  return s;
}

InferOutput Output(std::string name, DataType type, Shape shape, std::string data) {
  InferOutput o;
  o.name = std::move(name);
  o.data_type = type;
  o.shape = std::move(shape);
  o.data = std::move(data);
  return o;
}

std::shared_ptr<InferenceResponse> Response() {
  auto r = std::make_shared<InferenceResponse>();
  r->model_name = "mymodel";
  r->model_version = 3;
  r->request = std::make_unique<InferenceRequest>();
  return r;
}

void RequestOutput(InferenceResponse* r, std::string name, std::optional<bool> binary) {
  RequestedOutput o;
  o.name = std::move(name);
  if (binary) o.parameters.Set("binary_data", *binary);
  r->request->outputs.push_back(std::move(o));
}

TEST(JsonResponseCodecTest, PureJsonResponse) {
  auto r = Response();
  r->outputs.push_back(Output("f", DataType::kFp32, {2}, Bytes<float>({1.5f, -2.0f})));
  r->outputs.push_back(Output("i", DataType::kInt64, {1, 2}, Bytes<int64_t>({-7, 9})));
  r->outputs.push_back(Output("b", DataType::kBool, {2}, std::string("\1\0", 2)));
  r->outputs.push_back(Output("u", DataType::kUint8, {1}, "\xff"));
  auto http = EncodeInferResponse(r, false);
  ASSERT_TRUE(http.ok()) << http.status().message();
  EXPECT_EQ(http->status, 200);
  EXPECT_EQ(*http->headers.Find("Content-Type"), "application/json");
  EXPECT_EQ(http->headers.Find("Inference-Header-Content-Length"), nullptr);
  EXPECT_EQ(http->body.Flatten(),
            R"({"model_name":"mymodel","model_version":"3","outputs":[)"
            R"({"name":"f","datatype":"FP32","shape":[2],"data":[1.5,-2.0]},)"
            R"({"name":"i","datatype":"INT64","shape":[1,2],"data":[-7,9]},)"
            R"({"name":"b","datatype":"BOOL","shape":[2],"data":[true,false]},)"
            R"({"name":"u","datatype":"UINT8","shape":[1],"data":[255]}]})");
}

TEST(JsonResponseCodecTest, IdAndParametersOnlyWhenPresent) {
  auto r = Response();
  r->id = "req-1";
  r->parameters.Set("sequence_id", int64_t{5});
  r->parameters.Set("flag", true);
  r->parameters.Set("s", std::string("x"));
  auto http = EncodeInferResponse(r, false);
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(http->body.Flatten(),
            R"({"id":"req-1","model_name":"mymodel","model_version":"3",)"
            R"("parameters":{"sequence_id":5,"flag":true,"s":"x"},"outputs":[]})");
}

TEST(JsonResponseCodecTest, BinaryOutputsFollowTheJsonWithoutCopies) {
  auto r = Response();
  RequestOutput(r.get(), "a", true);
  RequestOutput(r.get(), "b", std::nullopt);
  RequestOutput(r.get(), "c", true);
  r->outputs.push_back(Output("a", DataType::kFp32, {3, 2}, Bytes<float>({1, 2, 3, 4, 5, 6})));
  r->outputs.push_back(Output("b", DataType::kInt32, {1}, Bytes<int32_t>({4})));
  r->outputs.push_back(Output("c", DataType::kUint16, {2}, Bytes<uint16_t>({7, 8})));
  const char* a_data = r->outputs[0].data.data();
  const char* c_data = r->outputs[2].data.data();
  auto http = EncodeInferResponse(r, false);
  ASSERT_TRUE(http.ok()) << http.status().message();
  EXPECT_EQ(*http->headers.Find("Content-Type"), "application/octet-stream");
  const std::string json =
      R"({"model_name":"mymodel","model_version":"3","outputs":[)"
      R"({"name":"a","datatype":"FP32","shape":[3,2],"parameters":{"binary_data_size":24}},)"
      R"({"name":"b","datatype":"INT32","shape":[1],"data":[4]},)"
      R"({"name":"c","datatype":"UINT16","shape":[2],"parameters":{"binary_data_size":4}}]})";
  EXPECT_EQ(*http->headers.Find("Inference-Header-Content-Length"), std::to_string(json.size()));
  EXPECT_EQ(http->body.Flatten(), json + r->outputs[0].data + r->outputs[2].data);
  std::vector<const char*> buffers;
  http->body.ForEachBuffer([&](std::string_view v) { buffers.push_back(v.data()); });
  ASSERT_EQ(buffers.size(), 3u);  // JSON, then a view of each binary output
  EXPECT_EQ(buffers[1], a_data);
  EXPECT_EQ(buffers[2], c_data);
  // The body keeps the response (and so the viewed tensors) alive.
  r.reset();
  EXPECT_EQ(http->body.size(), json.size() + 28);
  EXPECT_EQ(std::memcmp(buffers[2], Bytes<uint16_t>({7, 8}).data(), 4), 0);
}

TEST(JsonResponseCodecTest, BinaryDataOutputDefaultAndOverride) {
  auto r = Response();
  RequestOutput(r.get(), "json", false);
  r->outputs.push_back(Output("json", DataType::kInt8, {1}, "\x05"));
  r->outputs.push_back(Output("other", DataType::kInt8, {1}, "\x06"));
  EXPECT_FALSE(IsBinaryOutput(*r, r->outputs[0], true));
  EXPECT_TRUE(IsBinaryOutput(*r, r->outputs[1], true));
  EXPECT_FALSE(IsBinaryOutput(*r, r->outputs[1], false));
  auto http = EncodeInferResponse(r, true);
  ASSERT_TRUE(http.ok());
  const std::string body = http->body.Flatten();
  const size_t json_size = std::stoul(*http->headers.Find("Inference-Header-Content-Length"));
  EXPECT_EQ(body.substr(json_size), "\x06");
  EXPECT_NE(body.find(R"("name":"json","datatype":"INT8","shape":[1],"data":[5])"),
            std::string::npos);
  r->request.reset();  // no request: the default decides
  EXPECT_TRUE(IsBinaryOutput(*r, r->outputs[0], true));
}

// The overload for a response owned alone gives the same bytes; it keeps the response alive
// with the body when binary bytes are viewed, and frees it on return otherwise.
TEST(JsonResponseCodecTest, OwnedResponseEncodesAsTheSharedOne) {
  for (const bool binary : {false, true}) {
    auto owned = std::make_unique<InferenceResponse>();
    owned->model_name = "mymodel";
    owned->model_version = 3;
    owned->outputs.push_back(Output("o", DataType::kInt32, {2}, Bytes<int32_t>({11, -12})));
    std::shared_ptr<InferenceResponse> shared = Response();
    shared->request.reset();
    shared->outputs.push_back(Output("o", DataType::kInt32, {2}, Bytes<int32_t>({11, -12})));
    auto from_shared = EncodeInferResponse(shared, binary);
    shared.reset();
    auto from_owned = EncodeInferResponse(std::move(owned), binary);
    ASSERT_TRUE(from_shared.ok() && from_owned.ok()) << binary;
    EXPECT_EQ(from_owned->body.Flatten(), from_shared->body.Flatten()) << binary;
    EXPECT_EQ(*from_owned->headers.Find("Content-Type"),
              *from_shared->headers.Find("Content-Type"));
    EXPECT_EQ(from_owned->body.Flatten().ends_with(Bytes<int32_t>({11, -12})), binary);
  }
}

// A response owned alone whose binary outputs the body views lives exactly as long as the body
// (its reply buffer owns it), and the body views its bytes in place, in output order.
TEST(JsonResponseCodecTest, OwnedResponseLivesAsLongAsTheBodyThatViewsIt) {
  auto owned = std::make_unique<InferenceResponse>();
  owned->model_name = "mymodel";
  owned->model_version = 3;
  owned->request = std::make_unique<InferenceRequest>();
  auto sentinel = std::make_shared<int>(7);
  std::weak_ptr<int> alive = sentinel;
  owned->request->KeepAlive(std::move(sentinel));
  RequestOutput(owned.get(), "a", true);
  RequestOutput(owned.get(), "j", false);
  RequestOutput(owned.get(), "c", true);
  owned->outputs.push_back(Output("a", DataType::kInt32, {1}, Bytes<int32_t>({5})));
  owned->outputs.push_back(Output("j", DataType::kInt32, {1}, Bytes<int32_t>({6})));
  owned->outputs.push_back(Output("c", DataType::kInt32, {2}, Bytes<int32_t>({7, 8})));
  const char* a_data = owned->outputs[0].data.data();
  const char* c_data = owned->outputs[2].data.data();
  auto http = EncodeInferResponse(std::move(owned), false);
  ASSERT_TRUE(http.ok()) << http.status().message();
  std::vector<const char*> buffers;
  http->body.ForEachBuffer([&](std::string_view v) { buffers.push_back(v.data()); });
  ASSERT_EQ(buffers.size(), 3u);
  EXPECT_EQ(buffers[1], a_data);
  EXPECT_EQ(buffers[2], c_data);
  const std::string json =
      R"({"model_name":"mymodel","model_version":"3","outputs":[)"
      R"({"name":"a","datatype":"INT32","shape":[1],"parameters":{"binary_data_size":4}},)"
      R"({"name":"j","datatype":"INT32","shape":[1],"data":[6]},)"
      R"({"name":"c","datatype":"INT32","shape":[2],"parameters":{"binary_data_size":8}}]})";
  EXPECT_EQ(http->body.Flatten(), json + Bytes<int32_t>({5}) + Bytes<int32_t>({7, 8}));
  EXPECT_EQ(*http->headers.Find("Inference-Header-Content-Length"), std::to_string(json.size()));
  EXPECT_FALSE(alive.expired());
  http = Internal("gone");  // the body goes, and the response with it
  EXPECT_TRUE(alive.expired());

  // Without binary outputs nothing is viewed: the body does not hold the response.
  auto plain = std::make_unique<InferenceResponse>();
  plain->request = std::make_unique<InferenceRequest>();
  auto held = std::make_shared<int>(1);
  std::weak_ptr<int> plain_alive = held;
  plain->request->KeepAlive(std::move(held));
  plain->outputs.push_back(Output("j", DataType::kInt32, {1}, Bytes<int32_t>({6})));
  auto json_only = EncodeInferResponse(std::move(plain), false);
  ASSERT_TRUE(json_only.ok());
  plain.reset();
  EXPECT_TRUE(plain_alive.expired());
  EXPECT_EQ(*json_only->headers.Find("Content-Type"), "application/json");
}

TEST(JsonResponseCodecTest, ListedOutputWithoutBinaryDataIsJsonWhateverTheDefault) {
  // Triton: binary_data_output only sets the kind of outputs the request does not list.
  auto r = Response();
  RequestOutput(r.get(), "listed", std::nullopt);
  RequestOutput(r.get(), "listed_binary", true);
  r->outputs.push_back(Output("listed", DataType::kInt8, {1}, "\x05"));
  r->outputs.push_back(Output("listed_binary", DataType::kInt8, {1}, "\x06"));
  r->outputs.push_back(Output("unlisted", DataType::kInt8, {1}, "\x07"));
  EXPECT_FALSE(IsBinaryOutput(*r, r->outputs[0], true));
  EXPECT_TRUE(IsBinaryOutput(*r, r->outputs[1], false));
  EXPECT_TRUE(IsBinaryOutput(*r, r->outputs[2], true));
  EXPECT_FALSE(IsBinaryOutput(*r, r->outputs[2], false));
}

TEST(JsonResponseCodecTest, EmptyBinaryOutputKeepsJsonContentType) {
  auto r = Response();
  RequestOutput(r.get(), "e", true);
  r->outputs.push_back(Output("e", DataType::kFp32, {0}, ""));
  auto http = EncodeInferResponse(r, false);
  ASSERT_TRUE(http.ok());
  EXPECT_EQ(*http->headers.Find("Content-Type"), "application/json");
  EXPECT_NE(http->body.Flatten().find(R"("parameters":{"binary_data_size":0})"), std::string::npos);
}

TEST(JsonResponseCodecTest, SpecialValuesAndStrings) {
  auto r = Response();
  const float inf = std::numeric_limits<float>::infinity();
  r->outputs.push_back(Output("f", DataType::kFp32, {3}, Bytes<float>({std::nanf(""), inf, -inf})));
  r->outputs.push_back(Output("h", DataType::kFp16, {2}, Bytes<uint16_t>({0x3e00, 0xfc00})));
  r->outputs.push_back(Output("bf", DataType::kBf16, {1}, Bytes<uint16_t>({0x3fc0})));
  std::string strings;
  AppendBytesElement("a\"b\n\x01", &strings);
  AppendBytesElement("", &strings);
  r->outputs.push_back(Output("s", DataType::kBytes, {2}, strings));
  auto http = EncodeInferResponse(r, false);
  ASSERT_TRUE(http.ok()) << http.status().message();
  const std::string body = http->body.Flatten();
  EXPECT_NE(body.find(R"("data":[NaN,Infinity,-Infinity])"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("data":[1.5,-Infinity])"), std::string::npos) << body;
  EXPECT_NE(body.find(R"("name":"bf","datatype":"BF16","shape":[1],"data":[1.5])"),
            std::string::npos)
      << body;
  EXPECT_NE(body.find(R"("data":["a\"b\n\u0001",""])"), std::string::npos) << body;
}

TEST(JsonResponseCodecTest, DataNotMatchingShapeIsInternal) {
  auto r = Response();
  r->outputs.push_back(Output("f", DataType::kFp32, {3}, Bytes<float>({1, 2})));
  auto http = EncodeInferResponse(r, false);
  ASSERT_FALSE(http.ok());
  EXPECT_EQ(http.status().code(), StatusCode::kInternal);
  auto s = Response();
  std::string one;
  AppendBytesElement("x", &one);
  s->outputs.push_back(Output("s", DataType::kBytes, {2}, one));
  EXPECT_EQ(EncodeInferResponse(s, false).status().code(), StatusCode::kInternal);
  // Binary outputs are not interpreted, so they are sent as they are.
  EXPECT_TRUE(EncodeInferResponse(s, true).ok());
}

}  // namespace
}  // namespace nereid
