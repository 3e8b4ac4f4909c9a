// Ragged batching under the sequence batcher: requests of different sequences whose ragged input
// shapes differ share one execution under the Direct and the Oldest strategies (Triton's), with
// batch inputs computed over the execution's rows; non-ragged inputs of different shapes still run
// apart.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <future>
#include <mutex>

#include "core/scheduler/scheduler_test_support.h"
#include "core/scheduler/sequence/sequence_batch_scheduler.h"

namespace nereid {
namespace {

using namespace std::chrono_literals;
using test_support::Reply;
using ::testing::ElementsAre;

struct Execution {
  std::vector<int64_t> in_shape;
  std::vector<int32_t> index;  // accumulated element counts, one per row
  std::vector<int32_t> ready;
};

// IN arrives flat when ragged; INDEX holds the accumulated element counts per row. Writes SUM
// [rows, 1]: each row's sum.
class SumInstance : public backend::ModelInstance {
 public:
  SumInstance(std::mutex* mu, std::vector<Execution>* log) : mu_(mu), log_(log) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    const backend::TensorRef* in = nullptr;
    const backend::TensorRef* index = nullptr;
    const backend::TensorRef* ready = nullptr;
    for (const auto& t : args.inputs) {
      if (t.name == "IN") in = &t;
      if (t.name == "INDEX") index = &t;
      if (t.name == "READY") ready = &t;
    }
    if (in == nullptr || index == nullptr || ready == nullptr) return Internal("missing input");
    Execution e;
    e.in_shape.assign(in->shape.begin(), in->shape.end());
    const int64_t rows = index->shape[0];
    e.index.resize(static_cast<size_t>(rows));
    std::memcpy(e.index.data(), index->data.data(), rows * 4);
    e.ready.resize(static_cast<size_t>(rows));
    std::memcpy(e.ready.data(), ready->data.data(), rows * 4);
    const float* x = reinterpret_cast<const float*>(in->data.data());
    const int64_t sum_shape[] = {rows, 1};
    NEREID_ASSIGN_OR_RETURN(auto sums,
                            args.outputs->Allocate("SUM", DataType::kFp32, sum_shape, rows * 4));
    int32_t begin = 0;
    for (int64_t r = 0; r < rows; ++r) {
      float s = 0;
      for (int32_t i = begin; i < e.index[r]; ++i) s += x[i];
      std::memcpy(sums.data() + 4 * r, &s, 4);
      begin = e.index[r];
    }
    std::lock_guard<std::mutex> l(*mu_);
    log_->push_back(std::move(e));
    return Status::Ok();
  }

 private:
  std::mutex* mu_;
  std::vector<Execution>* log_;
};

class SequenceRaggedTest : public ::testing::Test {
 protected:
  SequenceRaggedTest() {
    model_.name = "seq_ragged";
    model_.version = 1;
    model_.max_batch_size = 4;
    model_.inputs = {{"IN", DataType::kFp32, {-1}}};
    model_.inputs[0].ragged = true;
    model_.outputs = {{"SUM", DataType::kFp32, {1}}};
    model_.batch_inputs = {
        {BatchInputKind::kAccumulatedElementCount, {"INDEX"}, DataType::kInt32, "IN"}};
    options_.max_batch_size = 4;
    options_.slots_per_instance = 4;
    options_.ready =
        ControlSpec{"READY", DataType::kInt32, {std::string(4, '\0'), std::string("\1\0\0\0", 4)}};
  }
  ~SequenceRaggedTest() override {
    if (sched_) sched_->Stop();
  }

  void Start() {
    std::vector<std::unique_ptr<backend::ModelInstance>> list;
    list.push_back(std::make_unique<SumInstance>(&mu_, &log_));
    sched_ = std::make_unique<SequenceBatchScheduler>(&model_, &stats_, options_, std::move(list));
  }

  // One request of sequence `id` whose IN is [1, values.size()].
  std::shared_ptr<Reply> Send(uint64_t id, std::vector<float> values) {
    Parameters params;
    params.Set("sequence_id", id);
    params.Set("sequence_start", true);
    params.Set("sequence_end", true);
    auto reply = std::make_shared<Reply>();
    SchedulerJob job = test_support::OneFloatJob(0, std::move(params), reply);
    auto buf = std::make_shared<std::vector<float>>(std::move(values));
    InferInput& in = job.request->inputs[0];
    in.shape = {1, static_cast<int64_t>(buf->size())};
    in.data = std::span<const char>(reinterpret_cast<const char*>(buf->data()), buf->size() * 4);
    job.request->KeepAlive(buf);
    sched_->Enqueue(std::move(job), false);
    return reply;
  }

  static float Sum(const std::shared_ptr<Reply>& r) {
    auto result = r->future.get();
    EXPECT_TRUE(result.ok()) << result.status().message();
    if (!result.ok()) return -1;
    EXPECT_EQ((*result)->outputs.size(), 1u);
    EXPECT_THAT((*result)->outputs[0].shape, ElementsAre(1, 1));
    float v;
    std::memcpy(&v, (*result)->outputs[0].data.data(), 4);
    return v;
  }

  std::vector<Execution> Log() {
    std::lock_guard<std::mutex> l(mu_);
    return log_;
  }

  ModelInfo model_;
  ModelStats stats_{4};
  SequenceOptions options_;
  std::mutex mu_;
  std::vector<Execution> log_;
  std::unique_ptr<SequenceBatchScheduler> sched_;
};

TEST_F(SequenceRaggedTest, DirectBatchesDifferentRaggedShapesIntoOneExecution) {
  options_.delay_count = 3;  // the three sequences are in their slots before anything runs
  Start();
  auto a = Send(1, {1, 2});
  auto b = Send(2, {10, 20, 30});
  auto c = Send(3, {5});
  EXPECT_EQ(Sum(a), 3);
  EXPECT_EQ(Sum(b), 60);
  EXPECT_EQ(Sum(c), 5);
  const auto log = Log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0].in_shape, ElementsAre(6));
  EXPECT_THAT(log[0].index, ElementsAre(2, 5, 6));
  EXPECT_THAT(log[0].ready, ElementsAre(1, 1, 1));
}

TEST_F(SequenceRaggedTest, DirectFillerRowTakesTheShapeOfTheFirstRequest) {
  options_.delay_count = 2;
  Start();
  // Sequence 9 (not ended) keeps slot 0; sequence 2 takes slot 1 and ends; sequence 3 then takes
  // slot 1 and runs with a filler in row 0.
  Parameters keep;
  keep.Set("sequence_id", uint64_t{9});
  keep.Set("sequence_start", true);
  auto first_reply = std::make_shared<Reply>();
  sched_->Enqueue(test_support::OneFloatJob(7, std::move(keep), first_reply), false);
  auto a = Send(2, {1, 2, 3});  // slot 1
  EXPECT_EQ(Sum(first_reply), 7);
  EXPECT_EQ(Sum(a), 6);
  auto b = Send(3, {4, 4});  // slot 1 again (freed by the END of sequence 2): row 0 is a filler
  EXPECT_EQ(Sum(b), 8);
  const auto log = Log();
  ASSERT_EQ(log.size(), 2u);
  EXPECT_THAT(log[0].in_shape, ElementsAre(4));  // [1] from slot 0 and [3] from slot 1
  EXPECT_THAT(log[0].index, ElementsAre(1, 4));
  ASSERT_THAT(log[1].ready, ElementsAre(0, 1));  // row 0 is the filler
  EXPECT_THAT(log[1].index, ElementsAre(2, 4));  // the filler has the shape of the request [1,2]
}

TEST_F(SequenceRaggedTest, OldestBatchesDifferentRaggedShapesIntoOneExecution) {
  options_.strategy = SequenceOptions::Strategy::kOldest;
  options_.delay_count = 3;
  Start();
  auto a = Send(1, {1});
  auto b = Send(2, {2, 2});
  auto c = Send(3, {3, 3, 3});
  EXPECT_EQ(Sum(a), 1);
  EXPECT_EQ(Sum(b), 4);
  EXPECT_EQ(Sum(c), 9);
  const auto log = Log();
  ASSERT_EQ(log.size(), 1u);
  EXPECT_THAT(log[0].in_shape, ElementsAre(6));
  EXPECT_THAT(log[0].index, ElementsAre(1, 3, 6));
}

TEST_F(SequenceRaggedTest, NonRaggedInputsOfDifferentShapesStillRunApart) {
  model_.inputs[0].ragged = false;
  for (auto strategy : {SequenceOptions::Strategy::kDirect, SequenceOptions::Strategy::kOldest}) {
    SCOPED_TRACE(strategy == SequenceOptions::Strategy::kDirect ? "direct" : "oldest");
    {
      std::lock_guard<std::mutex> l(mu_);
      log_.clear();
    }
    options_.strategy = strategy;
    options_.delay_count = 2;
    Start();
    auto a = Send(1, {1, 2});
    auto b = Send(2, {10, 20, 30});
    EXPECT_EQ(Sum(a), 3);
    EXPECT_EQ(Sum(b), 60);
    EXPECT_EQ(Log().size(), 2u);
    sched_->Stop();
    sched_.reset();
  }
}

}  // namespace
}  // namespace nereid
