// CachingScheduler in front of a DefaultScheduler whose backend counts its executions.
#include "core/scheduler/caching_scheduler.h"

#include <gtest/gtest.h>

#include <cstring>

#include "core/cache/local_cache.h"
#include "core/scheduler/default_scheduler.h"
#include "core/scheduler/scheduler_test_support.h"

namespace nereid {
namespace {

// OUT = IN * 2; counts executions.
class DoubleInstance : public backend::ModelInstance {
 public:
  explicit DoubleInstance(std::atomic<int>* runs) : runs_(runs) {}
  Status Execute(const backend::ExecuteArgs& args) override {
    ++*runs_;
    const backend::TensorRef& in = args.inputs[0];
    float v;
    std::memcpy(&v, in.data.data(), 4);
    v *= 2;
    auto buf = args.outputs->Allocate("OUT", DataType::kFp32, in.shape, 4);
    if (!buf.ok()) return buf.status();
    std::memcpy(buf->data(), &v, 4);
    return Status::Ok();
  }

 private:
  std::atomic<int>* runs_;
};

// A cache that keeps one value and answers it for every hash: every lookup after the first
// insert "collides".
class OneSlotCache : public ResponseCache {
 public:
  std::optional<std::string> Lookup(uint64_t) override { return slot_; }
  bool Insert(uint64_t, std::string value, bool replace) override {
    if (slot_ && !replace) return false;
    slot_ = std::move(value);
    return true;
  }
  CacheStats Stats() const override { return {}; }
  std::string_view name() const override { return "one-slot"; }

 private:
  std::optional<std::string> slot_;
};

struct Fixture {
  ModelInfo model;
  ModelStats stats{4};
  std::atomic<int> runs{0};
  std::unique_ptr<CachingScheduler> sched;

  explicit Fixture(std::shared_ptr<ResponseCache> cache) {
    model.name = "m";
    model.version = 1;
    model.max_batch_size = 4;
    model.inputs = {{"IN", DataType::kFp32, {1}}};
    model.outputs = {{"OUT", DataType::kFp32, {1}}};
    std::vector<std::unique_ptr<backend::ModelInstance>> list;
    list.push_back(std::make_unique<DoubleInstance>(&runs));
    stats.SetCacheEnabled();
    sched = std::make_unique<CachingScheduler>(
        &model, &stats, std::move(cache),
        std::make_unique<DefaultScheduler>(&model, &stats, std::move(list)));
  }
  ~Fixture() { sched->Stop(); }

  // Sends IN=value with request id `id`; returns OUT.
  float Send(float value, const std::string& id = "") {
    auto reply = std::make_shared<test_support::Reply>();
    SchedulerJob job = test_support::OneFloatJob(value, {}, reply);
    job.request->id = id;
    sched->Enqueue(std::move(job), false);
    auto r = reply->future.get();
    EXPECT_TRUE(r.ok());
    if (!r.ok()) return -1;
    EXPECT_EQ((*r)->id, id);
    EXPECT_EQ((*r)->model_name, "m");
    float out;
    std::memcpy(&out, (*r)->outputs.at(0).data.data(), 4);
    return out;
  }
};

TEST(CachingSchedulerTest, RepeatedRequestIsAnsweredFromTheCache) {
  Fixture f(std::make_shared<LocalCache>(1 << 20));
  EXPECT_EQ(f.Send(3, "a"), 6);
  EXPECT_EQ(f.Send(3, "b"), 6);  // a hit, built for request "b"
  EXPECT_EQ(f.Send(4, "c"), 8);
  EXPECT_EQ(f.runs.load(), 2);
  const auto s = f.stats.Snapshot();
  EXPECT_TRUE(s.cache_enabled);
  EXPECT_EQ(s.cache_hit.count, 1u);
  EXPECT_EQ(s.cache_miss.count, 2u);
  EXPECT_EQ(s.success.count, 3u);  // success includes the hit
  EXPECT_EQ(s.inference_count, 2u);
  EXPECT_EQ(s.execution_count, 2u);
  EXPECT_EQ(s.queue.count, 3u);
  EXPECT_EQ(s.compute_infer.count, 2u);
  EXPECT_EQ(s.compute_input.count, 2u);
}

TEST(CachingSchedulerTest, HashCollisionNeverReturnsAnotherRequestsAnswer) {
  Fixture f(std::make_shared<OneSlotCache>());
  EXPECT_EQ(f.Send(3), 6);
  EXPECT_EQ(f.Send(5), 10);  // the slot holds IN=3's answer under "the same hash": a miss
  EXPECT_EQ(f.Send(5), 10);  // now the slot holds IN=5's: a hit
  EXPECT_EQ(f.runs.load(), 2);
  EXPECT_EQ(f.stats.Snapshot().cache_hit.count, 1u);
}

TEST(CachingSchedulerTest, GarbageValueIsAMiss) {
  auto cache = std::make_shared<OneSlotCache>();
  cache->Insert(0, "garbage", false);
  Fixture f(cache);
  EXPECT_EQ(f.Send(3), 6);
  EXPECT_EQ(f.runs.load(), 1);
  EXPECT_EQ(f.stats.Snapshot().cache_hit.count, 0u);
}

}  // namespace
}  // namespace nereid
