// Tests DecoupledSender's contract (backend_api.h ResponseSender): 0..N responses through
// on_response, exactly one FINAL through the InferCallback, refusal after FINAL, the request
// failed when the sender is dropped without FINAL, and response statistics by index.
#include "core/model/decoupled_sender.h"

#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <vector>

namespace nereid {
namespace {

ModelInfo RepeatModel() {
  ModelInfo m;
  m.name = "repeat_int32";
  m.version = 1;
  m.decoupled = true;
  m.outputs.push_back({"OUT", DataType::kInt32, {1}});
  m.outputs.push_back({"IDX", DataType::kUint32, {1}});
  return m;
}

struct Collected {
  std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> partial;
  std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> final;
};

std::unique_ptr<InferenceRequest> Request(Collected* c, bool streaming = true) {
  auto r = std::make_unique<InferenceRequest>();
  r->model_name = "repeat_int32";
  r->id = "req-7";
  if (streaming) {
    r->on_response = [c](StatusOr<std::unique_ptr<InferenceResponse>> x) {
      c->partial.push_back(std::move(x));
    };
  }
  return r;
}

InferCallback Done(Collected* c) {
  return [c](StatusOr<std::unique_ptr<InferenceResponse>> x) { c->final.push_back(std::move(x)); };
}

const int64_t kOne[] = {1};

Status SendValue(DecoupledSender& s, int32_t v, uint32_t flags) {
  const uint32_t idx = 0;
  const backend::TensorRef outs[] = {
      {"OUT", DataType::kInt32, kOne, {reinterpret_cast<const char*>(&v), sizeof(v)}},
      {"IDX", DataType::kUint32, kOne, {reinterpret_cast<const char*>(&idx), sizeof(idx)}}};
  return s.Send(outs, flags);
}

TEST(DecoupledSender, ManyResponsesThenFlagsOnlyFinal) {
  ModelInfo model = RepeatModel();
  ModelStats stats(0);
  Collected c;
  {
    DecoupledSender s(model, &stats, Request(&c), Done(&c));
    ASSERT_TRUE(SendValue(s, 4, 0).ok());
    ASSERT_TRUE(SendValue(s, 5, 0).ok());
    ASSERT_TRUE(s.Send({}, backend::kResponseFinal).ok());
    // Anything after FINAL is refused and never delivered.
    Status late = SendValue(s, 6, 0);
    EXPECT_EQ(late.code(), StatusCode::kInternal);
    EXPECT_EQ(s.SendError(Internal("x"), backend::kResponseFinal).code(), StatusCode::kInternal);
  }
  ASSERT_EQ(c.partial.size(), 2u);
  ASSERT_EQ(c.final.size(), 1u);
  ASSERT_TRUE(c.partial[1].ok());
  const InferenceResponse& second = **c.partial[1];
  EXPECT_EQ(second.id, "req-7");
  ASSERT_EQ(second.outputs.size(), 2u);
  int32_t v = 0;
  std::memcpy(&v, second.outputs[0].data.data(), 4);
  EXPECT_EQ(v, 5);
  ASSERT_TRUE(c.final[0].ok());
  EXPECT_TRUE((*c.final[0])->empty_final);
  EXPECT_TRUE((*c.final[0])->outputs.empty());
  EXPECT_NE((*c.final[0])->request, nullptr);
  ModelStatsSnapshot snap = stats.Snapshot();
  EXPECT_EQ(snap.response_stats["0"].success.count, 1u);
  EXPECT_EQ(snap.response_stats["1"].success.count, 1u);
  // The flags-only FINAL is an empty response: compute_infer and empty_response only.
  EXPECT_EQ(snap.response_stats["2"].empty_response.count, 1u);
  EXPECT_EQ(snap.response_stats["2"].compute_infer.count, 1u);
  EXPECT_EQ(snap.response_stats["2"].compute_output.count, 0u);
  EXPECT_EQ(snap.response_stats["2"].success.count, 0u);
}

TEST(DecoupledSender, FinalWithOutputsIsTheLastResponse) {
  ModelInfo model = RepeatModel();
  Collected c;
  DecoupledSender s(model, nullptr, Request(&c), Done(&c));
  ASSERT_TRUE(SendValue(s, 9, backend::kResponseFinal).ok());
  EXPECT_TRUE(c.partial.empty());
  ASSERT_EQ(c.final.size(), 1u);
  ASSERT_TRUE(c.final[0].ok());
  EXPECT_FALSE((*c.final[0])->empty_final);
  EXPECT_EQ((*c.final[0])->outputs.size(), 2u);
}

TEST(DecoupledSender, ErrorsBeforeAndAsFinal) {
  ModelInfo model = RepeatModel();
  ModelStats stats(0);
  Collected c;
  DecoupledSender s(model, &stats, Request(&c), Done(&c));
  ASSERT_TRUE(s.SendError(Status(StatusCode::kUnknown, "simulated failure"), 0).ok());
  ASSERT_TRUE(
      s.SendError(Status(StatusCode::kCancelled, "cancelled"), backend::kResponseFinal).ok());
  ASSERT_EQ(c.partial.size(), 1u);
  EXPECT_EQ(c.partial[0].status().message(), "simulated failure");
  ASSERT_EQ(c.final.size(), 1u);
  EXPECT_EQ(c.final[0].status().code(), StatusCode::kCancelled);
  ModelStatsSnapshot snap = stats.Snapshot();
  EXPECT_EQ(snap.response_stats["0"].fail.count, 1u);
  // A CANCELLED response counts as cancel only (REFERENCE-2 §9.2).
  EXPECT_EQ(snap.response_stats["1"].cancel.count, 1u);
  EXPECT_EQ(snap.response_stats["1"].compute_infer.count, 0u);
  EXPECT_EQ(snap.response_stats["1"].fail.count, 0u);
}

TEST(DecoupledSender, DroppedWithoutFinalFailsTheRequestOnce) {
  ModelInfo model = RepeatModel();
  Collected c;
  {
    DecoupledSender s(model, nullptr, Request(&c), Done(&c));
    ASSERT_TRUE(SendValue(s, 1, 0).ok());
  }
  ASSERT_EQ(c.final.size(), 1u);
  EXPECT_EQ(c.final[0].status().code(), StatusCode::kInternal);
  EXPECT_EQ(c.final[0].status().message(),
            "model 'repeat_int32' released a request without sending a final response");
}

TEST(DecoupledSender, RefusesBadResponses) {
  ModelInfo model = RepeatModel();
  Collected c;
  DecoupledSender s(model, nullptr, Request(&c, /*streaming=*/false), Done(&c));
  // Several responses need a frontend that takes them.
  EXPECT_EQ(SendValue(s, 1, 0).code(), StatusCode::kUnsupported);
  // A response without outputs must be the FINAL one.
  EXPECT_EQ(s.Send({}, 0).code(), StatusCode::kInvalidArgument);
  const float f = 1;
  const backend::TensorRef wrong[] = {
      {"OUT", DataType::kFp32, kOne, {reinterpret_cast<const char*>(&f), sizeof(f)}}};
  EXPECT_TRUE(s.Send(wrong, backend::kResponseFinal).ok());  // delivered as the request's error
  ASSERT_EQ(c.final.size(), 1u);
  EXPECT_EQ(c.final[0].status().code(), StatusCode::kInternal);
  EXPECT_TRUE(c.partial.empty());
}

TEST(DecoupledSender, OneResponsePluginAnswersThroughTheAllocator) {
  ModelInfo model = RepeatModel();
  Collected c;
  DecoupledSender s(model, nullptr, Request(&c), Done(&c));
  s.FinishFromAllocator([](InferenceResponse* r) {
    r->outputs.push_back({"OUT", DataType::kInt32, {1}, std::string(4, '\0')});
    return Status::Ok();
  });
  ASSERT_EQ(c.final.size(), 1u);
  ASSERT_TRUE(c.final[0].ok());
  EXPECT_EQ((*c.final[0])->outputs.size(), 1u);
  EXPECT_EQ((*c.final[0])->id, "req-7");
  // After FINAL nothing else goes out.
  s.FinishFromAllocator([](InferenceResponse*) { return Status::Ok(); });
  EXPECT_EQ(c.final.size(), 1u);
}

TEST(DecoupledSender, SeesCancellation) {
  ModelInfo model = RepeatModel();
  Collected c;
  auto request = Request(&c);
  auto token = std::make_shared<CancelToken>();
  request->cancel_token = token;
  DecoupledSender s(model, nullptr, std::move(request), Done(&c));
  EXPECT_FALSE(s.IsCancelled());
  token->Cancel();
  EXPECT_TRUE(s.IsCancelled());
  ASSERT_TRUE(s.Send({}, backend::kResponseFinal).ok());
}

// A rescheduled request (backend API v7) is taken back with its callback; the old sender refuses
// later sends and does not fail it; the next sender continues the response indexes.
TEST(DecoupledSender, TakeBackHandsTheRequestToTheNextSender) {
  ModelInfo model = RepeatModel();
  ModelStats stats(0);
  Collected c;
  std::optional<DecoupledSender::TakenBack> back;
  {
    DecoupledSender s(model, &stats, Request(&c), Done(&c));
    ASSERT_TRUE(SendValue(s, 1, 0).ok());
    back = s.TakeBack();
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->progress.index, 1u);
    EXPECT_EQ(SendValue(s, 2, 0).code(), StatusCode::kInternal);
    EXPECT_FALSE(s.TakeBack().has_value());
  }
  EXPECT_TRUE(c.final.empty());  // the old sender's end did not fail the request
  {
    DecoupledSender next(model, &stats, std::move(back->request), std::move(back->done),
                         back->progress);
    ASSERT_TRUE(SendValue(next, 3, backend::kResponseFinal).ok());
  }
  ASSERT_EQ(c.partial.size(), 1u);
  ASSERT_EQ(c.final.size(), 1u);
  ASSERT_TRUE(c.final[0].ok());
  EXPECT_EQ((*c.final[0])->id, "req-7");
  const auto snap = stats.Snapshot();
  EXPECT_EQ(snap.response_stats.at("0").success.count, 1u);
  EXPECT_EQ(snap.response_stats.at("1").success.count, 1u);
}

TEST(DecoupledSender, NoTakeBackAfterFinal) {
  ModelInfo model = RepeatModel();
  ModelStats stats(0);
  Collected c;
  DecoupledSender s(model, &stats, Request(&c), Done(&c));
  ASSERT_TRUE(SendValue(s, 1, backend::kResponseFinal).ok());
  EXPECT_FALSE(s.TakeBack().has_value());
  EXPECT_EQ(c.final.size(), 1u);
}

}  // namespace
}  // namespace nereid
