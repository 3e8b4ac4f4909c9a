#include "python/bls_frames.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "python/binary_codec.h"

namespace nereid::backends::python {
namespace {

using ::testing::HasSubstr;

std::string Le(uint64_t v, int bytes) {
  std::string out;
  AppendLe(&out, v, bytes);
  return out;
}

// A "bls" frame as nereid_python_stub.py packs it.
std::string Bls(int64_t tag, const std::string& model, const std::vector<TensorDesc>& inputs,
                const std::string& parameters = "{}", const std::string& text_id = "",
                bool decoupled = false, uint64_t timeout = 0, int64_t parent = -1) {
  const std::string id = "req-1";
  const std::vector<std::string> requested = {"OUT"};
  std::string out = std::string(1, kBinaryBls) + Le(decoupled, 1) + Le(0, 2) + Le(3, 4) +
                    Le(tag, 8) + Le(static_cast<uint64_t>(-1), 8) + Le(timeout, 8) + Le(42, 8) +
                    Le(static_cast<uint64_t>(parent), 8) + Le(model.size(), 4) + Le(id.size(), 4) +
                    Le(text_id.size(), 4) + Le(parameters.size(), 4) + Le(requested.size(), 2) +
                    Le(inputs.size(), 2) + model + id + text_id + parameters;
  for (const std::string& r : requested) out += Le(r.size(), 2) + r;
  for (const TensorDesc& i : inputs) {
    out += Le(i.name.size(), 2) + Le(static_cast<uint64_t>(i.data_type), 1) +
           Le(i.shape.size(), 1) + Le(i.in_pool ? 1 : 0, 1) + Le(i.offset, 8) + Le(i.size, 8) +
           i.name;
    for (int64_t d : i.shape) out += Le(static_cast<uint64_t>(d), 8);
  }
  return out;
}

std::string Next(int64_t tag, int64_t stream) {
  return std::string(1, kBinaryBlsNext) + std::string(7, '\0') + Le(tag, 8) + Le(stream, 8);
}

TEST(BlsFrames, ParsesACall) {
  const std::string frame =
      Bls(7, "add_sub",
          {{"A", DataType::kFp32, {1, 4}, 0, 16}, {"B", DataType::kInt8, {3}, 4096, 3, true}},
          R"({"s":"x","n":-2,"b":true})", "seq", true, 1500, 12);
  StatusOr<StubMessage> m = ParseStubMessage(frame, 16, 1 << 20);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, "bls");
  EXPECT_EQ(m->tag, 7);
  EXPECT_EQ(m->model_name, "add_sub");
  EXPECT_EQ(m->model_version, -1);
  EXPECT_EQ(m->request_id, "req-1");
  EXPECT_EQ(m->flags, 3u);
  EXPECT_EQ(m->timeout_us, 1500u);
  EXPECT_EQ(m->correlation_id, 42u);
  EXPECT_EQ(m->correlation_id_str, "seq");
  EXPECT_EQ(m->parent_request, 12);
  EXPECT_TRUE(m->decoupled);
  EXPECT_FALSE(m->apart);
  EXPECT_EQ(m->requested_outputs, std::vector<std::string>{"OUT"});
  ASSERT_EQ(m->parameters.size(), 3u);
  EXPECT_EQ(std::get<std::string>(m->parameters[0].second), "x");
  EXPECT_EQ(std::get<int64_t>(m->parameters[1].second), -2);
  EXPECT_TRUE(std::get<bool>(m->parameters[2].second));
  ASSERT_EQ(m->inputs.size(), 2u);
  EXPECT_FALSE(m->inputs[0].in_pool);
  EXPECT_EQ(m->inputs[0].shape, (std::vector<int64_t>{1, 4}));
  EXPECT_TRUE(m->inputs[1].in_pool);
  EXPECT_EQ(m->inputs[1].offset, 4096u);
  EXPECT_EQ(m->inputs[1].data_type, DataType::kInt8);
}

TEST(BlsFrames, TheApartByteAsksForTheAnswerOnTheSocket) {
  // The stub sets byte 2 for a call of a thread other than the execution's.
  std::string frame = Bls(8, "add_sub", {});
  StatusOr<StubMessage> m = ParseStubMessage(frame, 0, 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_FALSE(m->apart);
  frame[2] = 1;
  m = ParseStubMessage(frame, 0, 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_TRUE(m->apart);
  EXPECT_FALSE(m->decoupled);
}

TEST(BlsFrames, ParsesANext) {
  StatusOr<StubMessage> m = ParseStubMessage(Next(9, 5), 0);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->op, "bls_next");
  EXPECT_EQ(m->tag, 9);
  EXPECT_EQ(m->request, 5);
}

TEST(BlsFrames, EveryCutIsRefusedNeverReadPast) {
  const std::string call =
      Bls(1, "m", {{"A", DataType::kFp32, {2}, 0, 8}, {"B", DataType::kFp32, {2}, 64, 8, true}},
          R"({"k":1})", "c");
  ASSERT_TRUE(ParseStubMessage(call, 8, 4096).ok());
  for (size_t n = 1; n < call.size(); ++n) {
    StatusOr<StubMessage> m = ParseStubMessage(call.substr(0, n), 8, 4096);
    EXPECT_FALSE(m.ok()) << n;
  }
  const std::string next = Next(1, 2);
  for (size_t n = 1; n < next.size(); ++n) {
    EXPECT_FALSE(ParseStubMessage(next.substr(0, n), 0).ok()) << n;
  }
  EXPECT_THAT(std::string(ParseStubMessage(next + "x", 0).status().message()),
              HasSubstr("trailing bytes"));
  EXPECT_THAT(std::string(ParseStubMessage(call + "x", 8, 4096).status().message()),
              HasSubstr("trailing bytes"));
}

TEST(BlsFrames, RefusesTensorsOutsideTheirPlace) {
  auto error_of = [](const std::string& frame, uint64_t payload, uint64_t pool) {
    StatusOr<StubMessage> m = ParseStubMessage(frame, payload, pool);
    return m.ok() ? std::string() : std::string(m.status().message());
  };
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", DataType::kFp32, {4}, 0, 16}}), 8, 1 << 20),
              HasSubstr("outside the payload"));
  // In the pool: the pool's size bounds it, not the payload's.
  EXPECT_EQ(error_of(Bls(1, "m", {{"A", DataType::kFp32, {4}, 4080, 16, true}}), 0, 4096), "");
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", DataType::kFp32, {4}, 4088, 16, true}}), 0, 4096),
              HasSubstr("tensor 'A' lies outside the shared-memory pool"));
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", DataType::kFp32, {4}, ~0ull - 4, 16, true}}), 0, 4096),
              HasSubstr("outside the shared-memory pool"));
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", DataType::kFp32, {4}, 0, 16, true}}), 16, 0),
              HasSubstr("outside the shared-memory pool"));  // no pool
  std::string unknown_place = Bls(1, "m", {{"A", DataType::kFp32, {4}, 0, 16}});
  unknown_place[unknown_place.size() - 8 - 1 - 8 - 8 - 1] = 2;  // dims, name, size, offset
  EXPECT_THAT(error_of(unknown_place, 16, 0), HasSubstr("unknown place"));
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", DataType::kFp32, {3}, 0, 16}}), 16, 0),
              HasSubstr("its shape needs 12"));
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", DataType::kFp32, {-4}, 0, 16}}), 16, 0),
              HasSubstr("negative dimension"));
  EXPECT_THAT(error_of(Bls(1, "m", {{"A", static_cast<DataType>(99), {4}, 0, 16}}), 16, 0),
              HasSubstr("unknown datatype"));
  EXPECT_THAT(error_of(Bls(1, "m", {}, "", "", false, ~0ull), 0, 0), HasSubstr("'timeout'"));
}

// The parent request is the stub's word: any value parses, and the instance gives no parent trace
// for one that names no request of its execution.
TEST(BlsFrames, TakesAnyParentRequest) {
  for (int64_t parent : {int64_t{-1}, int64_t{0}, int64_t{-7}, INT64_MAX, INT64_MIN}) {
    StatusOr<StubMessage> m = ParseStubMessage(Bls(1, "m", {}, "{}", "", false, 0, parent), 0);
    ASSERT_TRUE(m.ok()) << parent << ": " << m.status().message();
    EXPECT_EQ(m->parent_request, parent);
  }
}

TEST(BlsFrames, TheParentTraceIsThatOfARequestOfTheExecution) {
  auto first = std::make_shared<int>(1), third = std::make_shared<int>(3);
  std::vector<backend::RequestInfo> requests(3);
  requests[0].trace = first;
  requests[2].trace = third;  // request 1 is not traced
  EXPECT_EQ(BlsParentTrace(10, 10, requests), first);
  EXPECT_EQ(BlsParentTrace(11, 10, requests), nullptr);
  EXPECT_EQ(BlsParentTrace(12, 10, requests), third);
  // Any other id gives none: no trace=, an earlier execution's request, one not sent yet.
  for (int64_t id : {int64_t{-1}, int64_t{9}, int64_t{13}, INT64_MAX, INT64_MIN}) {
    EXPECT_EQ(BlsParentTrace(id, 10, requests), nullptr) << id;
  }
  EXPECT_EQ(BlsParentTrace(0, 0, {}), nullptr);  // a call outside an execution
}

TEST(BlsFrames, RefusesBadParameters) {
  for (const char* json : {R"({"f":1.5})", R"({"l":[1]})", "[1]", "{", ""}) {
    StatusOr<StubMessage> m = ParseStubMessage(Bls(1, "m", {}, json), 0);
    EXPECT_FALSE(m.ok()) << json;
    EXPECT_THAT(std::string(m.status().message()), HasSubstr("malformed message")) << json;
  }
}

TEST(BlsFrames, ACountFarBeyondTheFrameEndsAtItsEnd) {
  ASSERT_TRUE(ParseStubMessage(Bls(1, "m", {}), 0).ok());
  // 65535 inputs announced, none there: cut short, no huge work.
  std::string many = Bls(1, "m", {});
  const size_t counts = 1 + 1 + 2 + 4 + 8 * 5 + 4 * 4;  // the requested and input counts
  many[counts + 2] = '\xff';
  many[counts + 3] = '\xff';
  EXPECT_THAT(std::string(ParseStubMessage(many, 0).status().message()), HasSubstr("cut short"));
}

TEST(BlsFrames, EncodesAnAnswer) {
  const backend::InferTensor outputs[] = {{"A", DataType::kInt32, {1}, std::string(4, 'a')},
                                          {"B", DataType::kInt32, {2}, std::string(8, 'b')}};
  std::string out = "old";
  ASSERT_TRUE(EncodeBlsAnswer(3, Status::Ok(), outputs, true, &out));
  std::string want = std::string(1, kBinaryBlsAnswer) + Le(1, 1) + Le(0, 1) + Le(0, 1) + Le(2, 4) +
                     Le(0, 4) + Le(3, 8) + std::string(24, '\0');
  want += Le(1, 2) + Le(8, 1) + Le(1, 1) + Le(4, 8) + "A" + Le(1, 8);
  want += Le(1, 2) + Le(8, 1) + Le(1, 1) + Le(8, 8) + "B" + Le(2, 8);
  EXPECT_EQ(out, want);
  EXPECT_EQ(out.substr(kBlsAnswerShmSlot, 24), std::string(24, '\0'));
}

TEST(BlsFrames, EncodesAnErrorAnswer) {
  std::string out;
  EXPECT_FALSE(EncodeBlsAnswer(-4, NotFound("no such model"), {}, false, &out));
  const std::string want = std::string(1, kBinaryBlsAnswer) + Le(0, 1) + Le(1, 1) + Le(2, 1) +
                           Le(0, 4) + Le(13, 4) + Le(static_cast<uint64_t>(-4), 8) +
                           std::string(24, '\0') + "no such model";
  EXPECT_EQ(out, want);
}

TEST(BlsFrames, AnOutputTooLargeForItsFieldsBecomesAnError) {
  const backend::InferTensor outputs[] = {
      {std::string(70000, 'n'), DataType::kInt32, {1}, std::string(4, 'a')}};
  std::string out;
  EXPECT_FALSE(EncodeBlsAnswer(1, Status::Ok(), outputs, true, &out));
  EXPECT_EQ(out[2], 1);  // has error
  EXPECT_EQ(out[3], TritonErrorCodeOf(StatusCode::kInvalidArgument));
  EXPECT_THAT(out, HasSubstr("is too large for the Python stub"));
}

}  // namespace
}  // namespace nereid::backends::python
