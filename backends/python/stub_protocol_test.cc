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

TEST(StubProtocol, ParsesTheReadinessMessages) {
  StatusOr<StubMessage> m = ParseStubMessage(R"({"op":"ok","is_ready":true})", 0);
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->has_is_ready);
  m = ParseStubMessage(R"({"op":"ok","is_ready":"yes"})", 0);  // not a bool: no is_ready()
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE(m->has_is_ready);
  m = ParseStubMessage(R"({"op":"ready","message":"is_ready() must return a boolean value"})", 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->op, "ready");
  EXPECT_EQ(m->message, "is_ready() must return a boolean value");
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

// Little-endian builders for binary headers, as the stub writes them.
std::string Le(uint64_t v, int bytes) {
  std::string out;
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  return out;
}

// One output of a binary response (a placed tensor): name, DataType, shape, byte size, offset
// (the payload's or, place 1, the pool's).
std::string Output(const std::string& name, DataType type, std::vector<int64_t> shape,
                   uint64_t size, uint64_t offset = 0, int place = 0) {
  std::string out = Le(name.size(), 2) + Le(static_cast<uint64_t>(type), 1) + Le(shape.size(), 1) +
                    Le(place, 1) + Le(offset, 8) + Le(size, 8) + name;
  for (int64_t d : shape) out += Le(static_cast<uint64_t>(d), 8);
  return out;
}

std::string Response(int outputs) { return Le(0, 1) + Le(0, 1) + Le(outputs, 2) + Le(0, 4); }

std::string ErrorResponse(int code, const std::string& message) {
  return Le(1, 1) + Le(code, 1) + Le(0, 2) + Le(message.size(), 4) + message;
}

std::string ResultHead(int responses) {
  return std::string(1, kBinaryResult) + std::string(3, '\0') + Le(responses, 4);
}

TEST(StubProtocol, EncodesABinaryExecute) {
  const int64_t shape[] = {2};
  const char data[] = "abcdefgh";
  RequestHeader r;
  r.id = "x\"y";
  r.flags = 3;
  r.correlation_id_str = "seq";
  r.requested_outputs = {"OUT"};
  r.inputs = {{"A", DataType::kInt32, shape, std::span<const char>(data, 8)},
              {"B", DataType::kInt32, shape, std::span<const char>(data, 8)}};
  std::string header = "old content";
  ASSERT_TRUE(EncodeExecute(std::span(&r, 1), 41, &header).ok());
  std::string want =
      std::string(1, kBinaryExecute) + std::string(7 + 24, '\0') + Le(41, 8) + Le(1, 4);
  want += Le(3, 4) + Le(0, 8) + Le(3, 4) + Le(3, 4) + Le(2, 4) + Le(1, 2) + Le(2, 2);
  want += "seq" + std::string("x\"y") + "{}" + Le(3, 2) + "OUT";
  want += Le(1, 2) + Le(8, 1) + Le(1, 1) + Le(0, 8) + Le(8, 8) + "A" + Le(2, 8);
  want += Le(1, 2) + Le(8, 1) + Le(1, 1) + Le(8, 8) + Le(8, 8) + "B" + Le(2, 8);
  EXPECT_EQ(header, want);
}

TEST(StubProtocol, RefusesAnExecuteTooLargeForItsSizeFields) {
  RequestHeader r;
  r.requested_outputs = {std::string(70000, 'o')};
  std::string header;
  Status s = EncodeExecute(std::span(&r, 1), 0, &header);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
}

TEST(StubProtocol, ParsesABinaryResult) {
  const std::string header = ResultHead(2) + Response(2) +
                             Output("OUT", DataType::kFp32, {2, 2}, 16) +
                             Output("S", DataType::kBytes, {1}, 7, 16) + ErrorResponse(3, "bad");
  StatusOr<StubMessage> m = ParseStubMessage(header, 23);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, "result");
  ASSERT_EQ(m->responses.size(), 2u);
  ASSERT_EQ(m->responses[0].outputs.size(), 2u);
  const TensorDesc& out = m->responses[0].outputs[0];
  EXPECT_EQ(out.name, "OUT");
  EXPECT_EQ(out.data_type, DataType::kFp32);
  EXPECT_EQ(out.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(out.offset, 0u);
  EXPECT_EQ(out.size, 16u);
  EXPECT_EQ(m->responses[0].outputs[1].offset, 16u);  // back to back
  EXPECT_TRUE(m->responses[1].has_error);
  EXPECT_EQ(m->responses[1].error.message, "bad");
  EXPECT_EQ(StubErrorCode(m->responses[1].error.code), StatusCode::kInvalidArgument);
}

TEST(StubProtocol, ParsesABinarySend) {
  const std::string header = std::string(1, kBinarySend) + std::string(3, '\0') + Le(2, 4) +
                             Le(77, 8) + Response(1) + Output("OUT", DataType::kInt8, {3}, 3);
  StatusOr<StubMessage> m = ParseStubMessage(header, 3);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, "send");
  EXPECT_EQ(m->flags, 2u);
  EXPECT_EQ(m->request, 77);
  ASSERT_EQ(m->response.outputs.size(), 1u);
  EXPECT_EQ(m->response.outputs[0].size, 3u);
}

TEST(StubProtocol, RefusesMalformedBinaryHeaders) {
  const std::string good = ResultHead(1) + Response(1) + Output("OUT", DataType::kFp32, {4}, 16);
  ASSERT_TRUE(ParseStubMessage(good, 16).ok());
  // Every cut is refused, never read past.
  for (size_t n = 1; n < good.size(); ++n) {
    EXPECT_FALSE(ParseStubMessage(good.substr(0, n), 16).ok()) << n;
  }
  auto error_of = [](const std::string& header, uint64_t payload) {
    StatusOr<StubMessage> m = ParseStubMessage(header, payload);
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  EXPECT_THAT(error_of(good + "x", 16), HasSubstr("trailing bytes"));
  EXPECT_THAT(error_of(good, 8), HasSubstr("outside the payload"));
  EXPECT_THAT(error_of(ResultHead(1) + Response(1) + Output("OUT", DataType::kFp32, {3}, 16), 16),
              HasSubstr("its shape needs 12"));
  EXPECT_THAT(
      error_of(ResultHead(1) + Response(1) + Output("OUT", DataType::kInvalid, {4}, 16), 16),
      HasSubstr("unknown datatype"));
  EXPECT_THAT(
      error_of(ResultHead(1) + Response(1) + Output("OUT", static_cast<DataType>(99), {4}, 16), 16),
      HasSubstr("unknown datatype"));
  EXPECT_THAT(error_of(ResultHead(1) + Response(1) + Output("OUT", DataType::kFp32, {-4}, 16), 16),
              HasSubstr("negative dimension"));
  EXPECT_THAT(error_of(ResultHead(2) + Response(0), 0), HasSubstr("cut short"));
  // A response count far beyond the header ends at the header's end, not in a huge allocation.
  EXPECT_THAT(error_of(ResultHead(0x7fffffff), 0), HasSubstr("cut short"));
  EXPECT_THAT(error_of(ResultHead(1) + Le(1, 1) + Le(3, 1) + Le(1, 2) + Le(0, 4), 0),
              HasSubstr("both an error and outputs"));
  EXPECT_THAT(error_of(std::string(1, kBinaryExecute) + std::string(7, '\0'), 0),
              HasSubstr("Python stub message"));  // the server never accepts an execute
}

TEST(StubProtocol, ParsesOutputsInThePool) {
  const std::string header = ResultHead(1) + Response(3) + Output("A", DataType::kFp32, {2}, 8, 0) +
                             Output("P", DataType::kFp32, {4}, 16, 4096, 1) +
                             Output("B", DataType::kInt8, {3}, 3, 8);
  StatusOr<StubMessage> m = ParseStubMessage(header, 11, 1 << 20);
  ASSERT_TRUE(m.ok()) << m.status().message();
  const auto& outs = m->responses[0].outputs;
  ASSERT_EQ(outs.size(), 3u);
  EXPECT_FALSE(outs[0].in_pool);
  EXPECT_TRUE(outs[1].in_pool);
  EXPECT_EQ(outs[1].offset, 4096u);
  EXPECT_EQ(outs[2].offset, 8u);  // the payload's next, the pool's in between
  auto error_of = [](const std::string& header, uint64_t payload, uint64_t pool) {
    StatusOr<StubMessage> m = ParseStubMessage(header, payload, pool);
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  EXPECT_THAT(error_of(header, 11, 4096), HasSubstr("'P' lies outside the shared-memory pool"));
  EXPECT_THAT(error_of(header, 11, 0), HasSubstr("'P' lies outside the shared-memory pool"));
  EXPECT_THAT(
      error_of(ResultHead(1) + Response(1) + Output("A", DataType::kFp32, {2}, 8, 4), 12, 0),
      HasSubstr("'A' is out of order"));
  EXPECT_THAT(
      error_of(ResultHead(1) + Response(1) + Output("A", DataType::kFp32, {2}, 8, 0, 2), 8, 0),
      HasSubstr("unknown place"));
}

TEST(StubProtocol, BinaryErrorCodesBeyondTritonsAreInternal) {
  StatusOr<StubMessage> m = ParseStubMessage(ResultHead(1) + ErrorResponse(200, "x"), 0);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(StubErrorCode(m->responses[0].error.code), StatusCode::kInternal);
}

}  // namespace
}  // namespace nereid::backends::python

namespace nereid::backends::python {
namespace {

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

TEST(StubProtocol, EncodesControlAnswers) {
  EXPECT_EQ(TritonErrorCodeOf(StatusCode::kInternal), 1);
  EXPECT_EQ(StubErrorCode(TritonErrorCodeOf(StatusCode::kCancelled)), StatusCode::kCancelled);
  EXPECT_EQ(EncodeControlAnswer(4, Status::Ok(), true),
            R"({"op":"control_result","tag":4,"ready":true})");
  EXPECT_EQ(EncodeControlAnswer(4, NotFound("no"), false),
            R"({"op":"control_result","tag":4,"error":"no","ready":false})");
}

}  // namespace
}  // namespace nereid::backends::python

namespace nereid::backends::python {
namespace {

TEST(StubProtocol, ParsesTheBlsCancelQuestion) {
  StatusOr<StubMessage> drop = ParseStubMessage(R"({"op":"bls_cancel","request":5,"flags":1})", 0);
  ASSERT_TRUE(drop.ok()) << drop.status().message();
  EXPECT_EQ(drop->flags, 1u);
  EXPECT_EQ(drop->tag, 0);  // a dropped iterator waits for no answer
  EXPECT_FALSE(ParseStubMessage(R"({"op":"bls_cancel","request":"x"})", 0).ok());
  EXPECT_FALSE(ParseStubMessage(R"({"op":"bls_stream"})", 0).ok());
  // BLS calls and "next" are binary only (bls_frames_test.cc).
  EXPECT_FALSE(ParseStubMessage(R"({"op":"bls","model_name":"m","inputs":[]})", 0).ok());
  EXPECT_FALSE(ParseStubMessage(R"({"op":"bls_next","request":5,"tag":9})", 0).ok());
}

TEST(StubProtocol, ParsesReleaseFlags) {
  StatusOr<StubMessage> m = ParseStubMessage(R"({"op":"release","request":7,"flags":2})", 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, "release");
  EXPECT_EQ(m->request, 7);
  EXPECT_EQ(m->flags, 2u);
  EXPECT_FALSE(ParseStubMessage(R"({"op":"release","request":7,"flags":-1})", 0).ok());
}

}  // namespace
}  // namespace nereid::backends::python
