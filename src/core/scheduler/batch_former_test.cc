// FormBatch on a fake clock: every rule of the dynamic batcher (batch_former.h) in isolation.
#include "core/scheduler/batch_former.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

constexpr uint64_t kUs = 1000;

QueuedItem Item(int64_t batch = 1, uint64_t enqueue_ns = 0, std::string_view key = "a",
                uint64_t level = 0, uint64_t deadline_ns = 0, bool delayed = false,
                bool delay_on_timeout = false) {
  return {level, delayed, batch, key, enqueue_ns, deadline_ns, delay_on_timeout};
}

// DELAY-policy variant of Item.
QueuedItem DelayItem(int64_t batch, uint64_t enqueue_ns, uint64_t level, uint64_t deadline_ns,
                     bool delayed = false) {
  return Item(batch, enqueue_ns, "a", level, deadline_ns, delayed, true);
}

BatcherPolicy Policy(int64_t max_batch, std::vector<int64_t> preferred = {},
                     uint64_t delay_us = 0) {
  return {max_batch, std::move(preferred), delay_us * kUs};
}

TEST(BatchFormer, EmptyQueueSendsNothingAndWaitsForArrivals) {
  const auto d = FormBatch({}, Policy(8), 100);
  EXPECT_THAT(d.batch, IsEmpty());
  EXPECT_EQ(d.wake_at_ns, 0u);
}

TEST(BatchFormer, NoDelaySendsWhatIsThereAtOnce) {
  const auto d = FormBatch({Item(), Item(), Item()}, Policy(8, {8}), 0);
  EXPECT_THAT(d.batch, ElementsAre(0, 1, 2));
  EXPECT_EQ(d.batch_size, 3);
}

TEST(BatchFormer, NeverExceedsMaxBatchSize) {
  std::vector<QueuedItem> q(10, Item());
  const auto d = FormBatch(q, Policy(4, {4}), 0);
  EXPECT_THAT(d.batch, ElementsAre(0, 1, 2, 3));
  EXPECT_EQ(d.batch_size, 4);
}

TEST(BatchFormer, EmptyPreferredMeansMaxBatchSize) {
  std::vector<QueuedItem> q(6, Item());
  const auto d = FormBatch(q, Policy(4), 0);
  EXPECT_EQ(d.batch_size, 4);
}

TEST(BatchFormer, LargestPreferredSizeThatCanBeFormed) {
  // preferred {2, 4}, max 8, 5 requests waiting, long delay: 4 goes now (largest preferred).
  std::vector<QueuedItem> q(5, Item());
  const auto d = FormBatch(q, Policy(8, {2, 4}, 1000), 10);
  EXPECT_EQ(d.batch_size, 4);
  EXPECT_THAT(d.batch, ElementsAre(0, 1, 2, 3));
}

TEST(BatchFormer, PreferredSizeSentEvenBeforeDelay) {
  std::vector<QueuedItem> q(2, Item());
  const auto d = FormBatch(q, Policy(8, {2, 6}, 1000), 1);
  EXPECT_EQ(d.batch_size, 2);
}

TEST(BatchFormer, WaitsUntilOldestRequestReachesDelay) {
  std::vector<QueuedItem> q = {Item(1, 100 * kUs), Item(1, 150 * kUs)};
  const auto d = FormBatch(q, Policy(8, {4}, 500), 300 * kUs);
  EXPECT_THAT(d.batch, IsEmpty());
  EXPECT_EQ(d.wake_at_ns, 600 * kUs);  // oldest (100 us) + delay (500 us)
}

TEST(BatchFormer, SendsLargestBatchOnceDelayExpires) {
  std::vector<QueuedItem> q = {Item(1, 100 * kUs), Item(1, 150 * kUs), Item(1, 590 * kUs)};
  const auto d = FormBatch(q, Policy(8, {4}, 500), 600 * kUs);
  EXPECT_THAT(d.batch, ElementsAre(0, 1, 2));
  EXPECT_EQ(d.batch_size, 3);
}

TEST(BatchFormer, DelayExpiredSendsPastPreferredUpToMax) {
  // preferred {2} reached, but the delay has run out: the largest batch goes.
  std::vector<QueuedItem> q(5, Item(1, 0));
  const auto d = FormBatch(q, Policy(8, {2}, 10), 20 * kUs);
  EXPECT_EQ(d.batch_size, 5);
}

TEST(BatchFormer, RequestCountsItsOwnBatchSize) {
  // 3 + 3 would pass max 4: the first goes alone; a request of 4 fills a batch by itself.
  auto d = FormBatch({Item(3), Item(3)}, Policy(4, {4}), 0);
  EXPECT_THAT(d.batch, ElementsAre(0));
  EXPECT_EQ(d.batch_size, 3);
  d = FormBatch({Item(4), Item(1)}, Policy(4, {4}, 1000), 0);
  EXPECT_THAT(d.batch, ElementsAre(0));
  EXPECT_EQ(d.batch_size, 4);
}

TEST(BatchFormer, BatchSizesAddToPreferred) {
  const auto d = FormBatch({Item(2), Item(1), Item(1), Item(2)}, Policy(8, {4}, 1000), 0);
  EXPECT_THAT(d.batch, ElementsAre(0, 1, 2));
  EXPECT_EQ(d.batch_size, 4);
}

TEST(BatchFormer, GrowingPastLargestPreferredSendsWhatFits) {
  // preferred {4}, 3 then 3: 6 > 4 so the batch of 3 is sent now (Triton marks it saturated).
  const auto d = FormBatch({Item(3), Item(3)}, Policy(8, {4}, 1000), 0);
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, DifferentShapesNeverShareABatch) {
  auto d = FormBatch({Item(1, 0, "a"), Item(1, 0, "b"), Item(1, 0, "a")}, Policy(8), 0);
  EXPECT_THAT(d.batch, ElementsAre(0));
  d = FormBatch({Item(1, 0, "b"), Item(1, 0, "a")}, Policy(8), 0);
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, ShapeChangeSendsWithoutWaitingForDelay) {
  const auto d = FormBatch({Item(1, 0, "a"), Item(1, 0, "b")}, Policy(8, {8}, 1000), 1);
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, HigherPriorityLevelGoesFirst) {
  // Level 1 (index 0) requests arrived last but are batched first.
  std::vector<QueuedItem> q = {Item(1, 0, "a", 0), Item(1, 0, "a", 0), Item(1, 0, "a", 1)};
  // Items are grouped by level: the caller lists level 0 first.
  const auto d = FormBatch(q, Policy(2, {2}, 0), 0);
  EXPECT_THAT(d.batch, ElementsAre(0, 1));
}

TEST(BatchFormer, LowerLevelFillsWhatHigherLeaves) {
  std::vector<QueuedItem> q = {Item(1, 5, "a", 0), Item(1, 0, "a", 1), Item(1, 1, "a", 1)};
  const auto d = FormBatch(q, Policy(4, {4}, 0), 10);
  EXPECT_THAT(d.batch, ElementsAre(0, 1, 2));
}

TEST(BatchFormer, RejectTimeoutFailsExpiredRequests) {
  std::vector<QueuedItem> q = {Item(1, 0, "a", 0, 50), Item(1, 0, "a", 0, 0),
                               Item(1, 0, "a", 0, 500)};
  const auto d = FormBatch(q, Policy(8), 100);
  EXPECT_THAT(d.rejected, ElementsAre(0));
  EXPECT_THAT(d.delayed, IsEmpty());
  EXPECT_THAT(d.batch, ElementsAre(1, 2));
}

TEST(BatchFormer, TimeoutIsStrictlyAfterDeadline) {
  const auto d = FormBatch({Item(1, 0, "a", 0, 100)}, Policy(8), 100);
  EXPECT_THAT(d.rejected, IsEmpty());
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, DelayTimeoutMovesBehindOthers) {
  // DELAY: the expired first request goes behind the live ones; max 2 takes the live ones.
  std::vector<QueuedItem> q = {DelayItem(1, 0, 0, 50), DelayItem(1, 1, 0, 0),
                               DelayItem(1, 2, 0, 0)};
  const auto d = FormBatch(q, Policy(2, {2}, 0), 100);
  EXPECT_THAT(d.rejected, IsEmpty());
  EXPECT_THAT(d.delayed, ElementsAre(0));
  EXPECT_THAT(d.batch, ElementsAre(1, 2));
}

TEST(BatchFormer, DelayedRequestsStillRunAfterLiveOnes) {
  std::vector<QueuedItem> q = {DelayItem(1, 3, 0, 0), DelayItem(1, 0, 0, 0, /*delayed=*/true)};
  const auto d = FormBatch(q, Policy(4, {4}, 0), 100);
  EXPECT_THAT(d.batch, ElementsAre(0, 1));
}

TEST(BatchFormer, DelayedOfHigherLevelBeforeLowerLevel) {
  std::vector<QueuedItem> q = {DelayItem(1, 0, 0, 0, true), DelayItem(1, 0, 1, 0)};
  const auto d = FormBatch(q, Policy(1, {1}, 0), 100);
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, PerLevelTimeoutAction) {
  std::vector<QueuedItem> q = {DelayItem(1, 0, 0, 10), Item(1, 0, "a", 1, 10)};
  const auto d = FormBatch(q, Policy(8, {8}, 0), 100);
  EXPECT_THAT(d.delayed, ElementsAre(0));
  EXPECT_THAT(d.rejected, ElementsAre(1));
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, AllRejectedSendsNothing) {
  const auto d = FormBatch({Item(1, 0, "a", 0, 1)}, Policy(8), 100);
  EXPECT_THAT(d.rejected, ElementsAre(0));
  EXPECT_THAT(d.batch, IsEmpty());
}

TEST(BatchFormer, WakesForFirstTimeoutBeforeDelay) {
  std::vector<QueuedItem> q = {Item(1, 0, "a", 0, 200 * kUs)};
  const auto d = FormBatch(q, Policy(8, {4}, 1000), 10 * kUs);
  EXPECT_THAT(d.batch, IsEmpty());
  EXPECT_EQ(d.wake_at_ns, 200 * kUs + 1);
}

TEST(BatchFormer, FlushSendsWithoutWaiting) {
  const auto d = FormBatch({Item(1, 0)}, Policy(8, {4}, 1000), 1, /*flush=*/true);
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, ReachingLargestPreferredSendsEvenWithDelay) {
  // pending >= the largest preferred size: nothing to wait for.
  const auto d = FormBatch({Item(2), Item(2)}, Policy(8, {2, 4}, 1000), 0);
  EXPECT_EQ(d.batch_size, 4);
}

TEST(BatchFormer, LevelsAreOpaqueIncreasingKeys) {
  // Sparse level keys (as a queue with only levels 3 and 4000000000 in use) group the same way.
  std::vector<QueuedItem> q = {Item(1, 9, "a", 3), Item(1, 0, "a", 4000000000u)};
  const auto d = FormBatch(q, Policy(1, {1}), 10);
  EXPECT_THAT(d.batch, ElementsAre(0));
}

TEST(BatchFormer, Deterministic) {
  std::vector<QueuedItem> q = {Item(1, 1), Item(2, 2), Item(1, 3, "b")};
  const auto a = FormBatch(q, Policy(8, {4}, 100), 50);
  const auto b = FormBatch(q, Policy(8, {4}, 100), 50);
  EXPECT_EQ(a.batch, b.batch);
  EXPECT_EQ(a.wake_at_ns, b.wake_at_ns);
}

TEST(ExpireTimeouts, RejectsAndDelaysWhatExpiredAndNeverFormsABatch) {
  // Levels 0 (REJECT) and 1 (DELAY); items 0 and 2 expire at 100, 1 and 3 at 300.
  const std::vector<QueuedItem> items = {Item(1, 0, "a", 0, 100), Item(1, 0, "a", 0, 300),
                                         DelayItem(1, 0, 1, 100), DelayItem(1, 0, 1, 300)};
  const auto d = ExpireTimeouts(items, 150);
  EXPECT_THAT(d.rejected, ElementsAre(0));
  EXPECT_THAT(d.delayed, ElementsAre(2));
  EXPECT_THAT(d.batch, IsEmpty());
  EXPECT_EQ(d.wake_at_ns, 301u);  // the next live deadline, strictly after it
}

TEST(ExpireTimeouts, NothingExpiredWakesForTheEarliestDeadline) {
  const auto d = ExpireTimeouts({Item(1, 0, "a", 0, 500), Item(1, 0, "a", 0, 200), Item()}, 100);
  EXPECT_THAT(d.rejected, IsEmpty());
  EXPECT_THAT(d.delayed, IsEmpty());
  EXPECT_EQ(d.wake_at_ns, 201u);
}

TEST(ExpireTimeouts, DelayedRequestsAndRequestsWithoutDeadlineNeverWake) {
  const auto d = ExpireTimeouts({Item(), DelayItem(1, 0, 0, 50, /*delayed=*/true)}, 100);
  EXPECT_THAT(d.delayed, IsEmpty());
  EXPECT_EQ(d.wake_at_ns, 0u);
}

}  // namespace
}  // namespace nereid
