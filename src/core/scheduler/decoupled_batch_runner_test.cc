// A batch of a decoupled model's requests as one execution (decoupled_batch_runner.h): one sender
// per request whose responses reach that request only, the allocator's batched outputs split into
// one FINAL per request, a failed execution failing every request, senders kept past Execute.
#include "core/scheduler/decoupled_batch_runner.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <latch>
#include <thread>

namespace nereid {
namespace {

ModelInfo Model() {
  ModelInfo m;
  m.name = "d";
  m.version = 1;
  m.max_batch_size = 8;
  m.decoupled = true;
  m.inputs = {{"IN", DataType::kInt32, {1}}};
  m.outputs = {{"OUT", DataType::kInt32, {1}}};
  return m;
}

struct Collected {
  std::vector<int32_t> partial;  // OUT of every response before FINAL
  std::vector<StatusOr<std::unique_ptr<InferenceResponse>>> final;
};

int32_t Out(const InferenceResponse& r) {
  int32_t v = 0;
  std::memcpy(&v, r.outputs.at(0).data.data(), 4);
  return v;
}

std::unique_ptr<InferenceRequest> Request(int32_t value, Collected* c) {
  auto r = std::make_unique<InferenceRequest>();
  auto buf = std::make_shared<int32_t>(value);
  InferInput in;
  in.name = "IN";
  in.data_type = DataType::kInt32;
  in.shape = {1, 1};
  in.data = std::span<const char>(reinterpret_cast<const char*>(buf.get()), 4);
  r->inputs.push_back(in);
  r->KeepAlive(buf);
  r->on_response = [c](StatusOr<std::unique_ptr<InferenceResponse>> x) {
    ASSERT_TRUE(x.ok());
    c->partial.push_back(Out(**x));
  };
  return r;
}

// Mode kSenders: request i gets `IN` and `IN + 1`, then a flags-only FINAL, through sender i.
// kAllocator: writes OUT = 2 * IN for the whole batch and keeps no sender. kKeep: keeps the
// senders and answers from another thread after Execute returned. kFail: Execute fails.
class Instance : public backend::ModelInstance {
 public:
  enum Mode { kSenders, kAllocator, kKeep, kFail } mode = kSenders;
  std::vector<size_t> senders_seen;
  std::thread later;

  ~Instance() override {
    Release();
    if (later.joinable()) later.join();
  }

  // kKeep: lets the kept senders answer (the test checks first that nothing arrived yet).
  void Release() {
    if (released_) return;
    released_ = true;
    gate_.count_down();
  }

  Status Execute(const backend::ExecuteArgs& args) override {
    senders_seen.push_back(args.senders.size());
    const int32_t* data = reinterpret_cast<const int32_t*>(args.inputs[0].data.data());
    std::vector<int32_t> in(data, data + args.senders.size());
    auto send = [](backend::ResponseSender& s, int32_t value) {
      const int64_t one[] = {1};
      for (int32_t k = 0; k < 2; ++k) {
        const int32_t v = value + k;
        const backend::TensorRef out[] = {
            {"OUT", DataType::kInt32, one, {reinterpret_cast<const char*>(&v), 4}}};
        EXPECT_TRUE(s.Send(out, 0).ok());
      }
      EXPECT_TRUE(s.Send({}, backend::kResponseFinal).ok());
    };
    switch (mode) {
      case kFail:
        return Internal("boom");
      case kSenders:
        for (size_t i = 0; i < args.senders.size(); ++i) send(*args.senders[i], in[i]);
        return Status::Ok();
      case kKeep: {
        std::vector<std::shared_ptr<backend::ResponseSender>> kept(args.senders.begin(),
                                                                   args.senders.end());
        later = std::thread([this, in, kept = std::move(kept), send]() {
          gate_.wait();
          for (size_t i = 0; i < kept.size(); ++i) send(*kept[i], in[i]);
        });
        return Status::Ok();
      }
      case kAllocator: {
        const int64_t shape[] = {args.batch_size, 1};
        auto buf = args.outputs->Allocate("OUT", DataType::kInt32, shape,
                                          static_cast<size_t>(args.batch_size) * 4);
        if (!buf.ok()) return buf.status();
        int32_t* dst = reinterpret_cast<int32_t*>(buf->data());
        for (int64_t i = 0; i < args.batch_size; ++i) dst[i] = 2 * data[i];
        return Status::Ok();
      }
    }
    return Status::Ok();
  }

 private:
  std::latch gate_{1};
  bool released_ = false;  // main thread only
};

struct Harness {
  ModelInfo model = Model();
  ModelStats stats{8};
  Instance instance;
  std::vector<Collected> got = std::vector<Collected>(3);

  Status Go(size_t n) {
    std::vector<std::unique_ptr<InferenceRequest>> requests;
    std::vector<InferCallback> dones;
    for (size_t i = 0; i < n; ++i) {
      requests.push_back(Request(static_cast<int32_t>(10 * (i + 1)), &got[i]));
      dones.push_back([c = &got[i]](StatusOr<std::unique_ptr<InferenceResponse>> r) {
        c->final.push_back(std::move(r));
      });
    }
    ExecutionTimes times;
    return RunDecoupledBatchOnInstance(instance, model, std::move(requests),
                                       std::vector<int64_t>(n, 1), std::move(dones), &stats,
                                       &times);
  }
};

TEST(DecoupledBatchRunner, EachRequestGetsItsOwnResponsesAndFinal) {
  Harness run;
  ASSERT_TRUE(run.Go(3).ok());
  EXPECT_EQ(run.instance.senders_seen, std::vector<size_t>{3});
  for (size_t i = 0; i < 3; ++i) {
    const int32_t v = static_cast<int32_t>(10 * (i + 1));
    EXPECT_EQ(run.got[i].partial, (std::vector<int32_t>{v, v + 1}));
    ASSERT_EQ(run.got[i].final.size(), 1u);
    ASSERT_TRUE(run.got[i].final[0].ok());
    EXPECT_TRUE((*run.got[i].final[0])->outputs.empty());  // flags-only FINAL
  }
  const auto snapshot = run.stats.Snapshot();
  EXPECT_EQ(snapshot.response_stats.at("1").success.count, 3u);
  EXPECT_EQ(snapshot.response_stats.at("2").empty_response.count, 3u);
}

TEST(DecoupledBatchRunner, SingleRequestRunsAsTheDefaultSchedulerRunsIt) {
  Harness run;
  ASSERT_TRUE(run.Go(1).ok());
  EXPECT_EQ(run.instance.senders_seen, std::vector<size_t>{1});
  EXPECT_EQ(run.got[0].partial, (std::vector<int32_t>{10, 11}));
  ASSERT_EQ(run.got[0].final.size(), 1u);
}

TEST(DecoupledBatchRunner, AllocatorOutputsAreSplitIntoOneFinalPerRequest) {
  Harness run;
  run.instance.mode = Instance::kAllocator;
  ASSERT_TRUE(run.Go(3).ok());
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_TRUE(run.got[i].partial.empty());
    ASSERT_EQ(run.got[i].final.size(), 1u);
    ASSERT_TRUE(run.got[i].final[0].ok());
    const InferenceResponse& r = **run.got[i].final[0];
    EXPECT_EQ(r.outputs.at(0).shape, (Shape{1, 1}));
    EXPECT_EQ(Out(r), static_cast<int32_t>(20 * (i + 1)));
  }
}

TEST(DecoupledBatchRunner, FailedExecutionFailsEveryRequest) {
  Harness run;
  run.instance.mode = Instance::kFail;
  const Status s = run.Go(3);
  EXPECT_EQ(s.message(), "boom");
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(run.got[i].final.size(), 1u);
    ASSERT_FALSE(run.got[i].final[0].ok());
    EXPECT_EQ(run.got[i].final[0].status().message(), "boom");
  }
}

TEST(DecoupledBatchRunner, KeptSendersAnswerFromAnotherThread) {
  Harness run;
  run.instance.mode = Instance::kKeep;
  ASSERT_TRUE(run.Go(2).ok());
  EXPECT_TRUE(run.got[0].final.empty());  // Execute returned before any response
  run.instance.Release();
  run.instance.later.join();
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(run.got[i].partial.size(), 2u);
    ASSERT_EQ(run.got[i].final.size(), 1u);
    EXPECT_TRUE(run.got[i].final[0].ok());
  }
}

}  // namespace
}  // namespace nereid
