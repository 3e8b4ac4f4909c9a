#include "python/stub_protocol.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace nereid::backends::python {
namespace {

using ::testing::HasSubstr;

TEST(StubProtocol, FrameHeaderRoundTrips) {
  const auto bytes = EncodeFrameHeader({17, (1ull << 40) + 3});
  StatusOr<FrameSizes> sizes = DecodeFrameHeader(bytes);
  ASSERT_TRUE(sizes.ok());
  EXPECT_EQ(sizes->json_size, 17u);
  EXPECT_EQ(sizes->payload_size, (1ull << 40) + 3);
}

TEST(StubProtocol, RefusesAHugeJsonPart) {
  const auto bytes = EncodeFrameHeader({kMaxFrameJsonSize + 1, 0});
  EXPECT_FALSE(DecodeFrameHeader(bytes).ok());
}

TEST(StubProtocol, ParsesAResult) {
  StatusOr<StubMessage> m = ParseStubMessage(
      R"({"op":"result","responses":[{"outputs":[{"name":"OUT","datatype":"FP32","shape":[2,2],"offset":0,"size":16}]},{"error":{"message":"bad","code":3}}]})",
      16);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ASSERT_EQ(m->responses.size(), 2u);
  EXPECT_EQ(m->responses[0].outputs[0].name, "OUT");
  EXPECT_EQ(m->responses[0].outputs[0].data_type, DataType::kFp32);
  EXPECT_TRUE(m->responses[1].has_error);
  EXPECT_EQ(StubErrorCode(m->responses[1].error.code), StatusCode::kInvalidArgument);
}

TEST(StubProtocol, RefusesATensorOutsideThePayload) {
  StatusOr<StubMessage> m = ParseStubMessage(
      R"({"op":"result","responses":[{"outputs":[{"name":"OUT","datatype":"FP32","shape":[4],"offset":8,"size":16}]}]})",
      16);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("outside the payload"));
}

TEST(StubProtocol, RefusesASizeThatDoesNotMatchTheShape) {
  StatusOr<StubMessage> m = ParseStubMessage(
      R"({"op":"result","responses":[{"outputs":[{"name":"OUT","datatype":"INT32","shape":[3],"offset":0,"size":8}]}]})",
      8);
  ASSERT_FALSE(m.ok());
  EXPECT_THAT(std::string(m.status().message()), HasSubstr("its shape needs 12"));
}

TEST(StubProtocol, RefusesUnknownOpsAndTypes) {
  EXPECT_FALSE(ParseStubMessage(R"({"op":"nope"})", 0).ok());
  EXPECT_FALSE(ParseStubMessage(R"([1])", 0).ok());
  EXPECT_FALSE(
      ParseStubMessage(
          R"({"op":"send","outputs":[{"name":"X","datatype":"BF17","shape":[1],"offset":0,"size":0}]})",
          0)
          .ok());
}

TEST(StubProtocol, UnknownErrorCodesAreInternal) {
  EXPECT_EQ(StubErrorCode(42), StatusCode::kInternal);
  EXPECT_EQ(StubErrorCode(0), StatusCode::kUnknown);
  EXPECT_EQ(StubErrorCode(7), StatusCode::kCancelled);
}

TEST(StubProtocol, EncodesExecuteWithOffsets) {
  const int64_t shape[] = {2};
  const char data[] = "abcdefgh";
  RequestHeader r;
  r.id = "x\"y";
  r.requested_outputs = {"OUT"};
  r.inputs = {{"A", DataType::kInt32, shape, std::span<const char>(data, 8)},
              {"B", DataType::kInt32, shape, std::span<const char>(data, 8)}};
  const std::string json = EncodeExecute("m_0", "m", std::span(&r, 1), 41);
  EXPECT_THAT(json, HasSubstr(R"("id":"x\"y")"));
  EXPECT_THAT(json, HasSubstr(R"("first_request":41)"));
  EXPECT_THAT(json, HasSubstr(R"("name":"B","datatype":"INT32","shape":[2],"offset":8,"size":8)"));
}

}  // namespace
}  // namespace nereid::backends::python

namespace nereid::backends::python {
namespace {

TEST(StubProtocol, ParsesABlsRequest) {
  StatusOr<StubMessage> m = ParseStubMessage(
      R"({"op":"bls","model_name":"add_sub","model_version":-1,"request_id":"r","requested":["OUTPUT0"],"inputs":[{"name":"INPUT0","datatype":"FP32","shape":[1,4],"offset":0,"size":16}]})",
      16);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->model_name, "add_sub");
  EXPECT_EQ(m->model_version, -1);
  EXPECT_EQ(m->requested_outputs, std::vector<std::string>{"OUTPUT0"});
  ASSERT_EQ(m->inputs.size(), 1u);
  EXPECT_EQ(m->inputs[0].size, 16u);
  EXPECT_FALSE(
      ParseStubMessage(
          R"({"op":"bls","inputs":[{"name":"I","datatype":"FP32","shape":[4],"offset":0,"size":16}]})",
          8)
          .ok());
  EXPECT_FALSE(ParseStubMessage(R"({"op":"bls","requested":[1],"inputs":[]})", 0).ok());
}

TEST(StubProtocol, ParsesABlsTimeout) {
  StatusOr<StubMessage> m =
      ParseStubMessage(R"({"op":"bls","model_name":"m","timeout":1500,"inputs":[]})", 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->timeout_us, 1500u);
  StatusOr<StubMessage> none = ParseStubMessage(R"({"op":"bls","model_name":"m","inputs":[]})", 0);
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->timeout_us, 0u);
  EXPECT_FALSE(
      ParseStubMessage(R"({"op":"bls","model_name":"m","timeout":-1,"inputs":[]})", 0).ok());
  EXPECT_FALSE(
      ParseStubMessage(R"({"op":"bls","model_name":"m","timeout":"x","inputs":[]})", 0).ok());
}

TEST(StubProtocol, ParsesIsCancelledAndEncodesTheAnswer) {
  StatusOr<StubMessage> m = ParseStubMessage(R"({"op":"is_cancelled","request":2,"tag":7})", 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, "is_cancelled");
  EXPECT_EQ(m->request, 2);
  EXPECT_EQ(m->tag, 7);
  EXPECT_FALSE(ParseStubMessage(R"({"op":"is_cancelled","tag":"x"})", 0).ok());
  EXPECT_EQ(EncodeCancelled(7, true), R"({"op":"cancelled","tag":7,"cancelled":true})");
  EXPECT_EQ(EncodeCancelled(-1, false), R"({"op":"cancelled","tag":-1,"cancelled":false})");
}

TEST(StubProtocol, EncodesBlsResults) {
  const backend::InferTensor outputs[] = {{"A", DataType::kInt32, {1}, std::string(4, 'a')},
                                          {"B", DataType::kInt32, {2}, std::string(8, 'b')}};
  const std::string ok = EncodeBlsResult(3, Status::Ok(), outputs);
  EXPECT_THAT(ok, HasSubstr(R"({"op":"bls_result","tag":3,)"));
  EXPECT_THAT(ok, HasSubstr(R"("name":"B","datatype":"INT32","shape":[2],"offset":4,"size":8)"));
  const std::string err = EncodeBlsResult(4, NotFound("no such model"), {});
  EXPECT_THAT(err, HasSubstr(R"("error":{"message":"no such model","code":2})"));
  EXPECT_EQ(TritonErrorCodeOf(StatusCode::kInternal), 1);
  EXPECT_EQ(StubErrorCode(TritonErrorCodeOf(StatusCode::kCancelled)), StatusCode::kCancelled);
}

TEST(StubProtocol, ParsesBlsRequestFields) {
  StatusOr<StubMessage> m = ParseStubMessage(
      R"({"op":"bls","model_name":"m","tag":5,"inputs":[],"correlation_id":"abc","flags":3,"decoupled":true,"parameters":{"s":"x","n":-2,"b":true}})",
      0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->correlation_id_str, "abc");
  EXPECT_EQ(m->flags, 3u);
  EXPECT_TRUE(m->decoupled);
  ASSERT_EQ(m->parameters.size(), 3u);
  EXPECT_EQ(std::get<std::string>(m->parameters[0].second), "x");
  EXPECT_EQ(std::get<int64_t>(m->parameters[1].second), -2);
  EXPECT_TRUE(std::get<bool>(m->parameters[2].second));
  m = ParseStubMessage(R"({"op":"bls","model_name":"m","inputs":[],"correlation_id":42})", 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->correlation_id, 42u);
  EXPECT_TRUE(m->correlation_id_str.empty());
  EXPECT_FALSE(m->decoupled);
}

TEST(StubProtocol, RefusesBadBlsRequestFields) {
  for (const char* json : {
           R"({"op":"bls","inputs":[],"parameters":{"f":1.5}})",
           R"({"op":"bls","inputs":[],"parameters":{"l":[1]}})",
           R"({"op":"bls","inputs":[],"parameters":[1]})",
           R"({"op":"bls","inputs":[],"correlation_id":-1})",
           R"({"op":"bls","inputs":[],"correlation_id":1.5})",
       }) {
    StatusOr<StubMessage> m = ParseStubMessage(json, 0);
    EXPECT_FALSE(m.ok()) << json;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr("malformed message")) << json;
  }
}

TEST(StubProtocol, ParsesModelControlMessages) {
  StatusOr<StubMessage> m = ParseStubMessage(
      R"({"op":"load_model","tag":2,"model_name":"m","config":"{}","files":[{"path":"1/model.py","offset":0,"size":3}]})",
      3);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->config, "{}");
  ASSERT_EQ(m->files.size(), 1u);
  EXPECT_EQ(m->files[0].first, "1/model.py");
  EXPECT_EQ(m->files[0].second.size, 3u);
  EXPECT_FALSE(
      ParseStubMessage(R"({"op":"load_model","files":[{"path":"a","offset":1,"size":3}]})", 3)
          .ok());
  EXPECT_FALSE(ParseStubMessage(R"({"op":"load_model","files":{}})", 0).ok());
  m = ParseStubMessage(R"({"op":"unload_model","model_name":"m","unload_dependents":true})", 0);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->unload_dependents);
  m = ParseStubMessage(R"({"op":"model_ready","model_name":"m","model_version":3})", 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->model_version, 3);
}

TEST(StubProtocol, EncodesStreamAndControlAnswers) {
  std::vector<backend::InferTensor> outs = {{"OUT", DataType::kInt32, {1}, std::string(4, '\0')}};
  EXPECT_THAT(EncodeBlsStreamResult(9, Status::Ok(), outs, false),
              HasSubstr(R"("tag":9,"final":false,"outputs":[{"name":"OUT")"));
  EXPECT_THAT(EncodeBlsStreamResult(9, Internal("x"), {}, true),
              HasSubstr(R"("final":true,"error":{"message":"x","code":1})"));
  EXPECT_EQ(EncodeControlAnswer(4, Status::Ok(), true),
            R"({"op":"control_result","tag":4,"ready":true})");
  EXPECT_EQ(EncodeControlAnswer(4, NotFound("no"), false),
            R"({"op":"control_result","tag":4,"error":"no","ready":false})");
}

}  // namespace
}  // namespace nereid::backends::python
