// SequenceTable on a fake clock: slot assignment, backlog and promotion, START rules, the reaper.
#include "core/scheduler/sequence/sequence_table.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

using Table = SequenceTable<int, int>;
constexpr uint64_t kIdle = 1000;

bool Admit(Table& t, const std::string& key, bool start, bool end, uint64_t now, int value) {
  return t.Admit(key, start, end, now, value);
}

// Takes the head request of (instance, slot); returns its value or -1 when there is none.
int TakeAt(Table& t, size_t instance, size_t slot, uint64_t now, bool* end = nullptr) {
  Table::Sequence* s = t.Head(instance, slot);
  if (s == nullptr) return -1;
  int job = 0;
  bool e = false;
  auto keep = t.Take(s, &job, &e);
  t.Finish(keep.get(), now);
  if (end != nullptr) *end = e;
  return job;
}

TEST(SequenceTableTest, SpreadsSequencesOverInstancesThenSlots) {
  Table t(2, 2, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "b", true, false, 0, 2));
  ASSERT_TRUE(Admit(t, "c", true, false, 0, 3));
  EXPECT_EQ(t.Head(0, 0)->key, "a");
  EXPECT_EQ(t.Head(1, 0)->key, "b");
  EXPECT_EQ(t.Head(0, 1)->key, "c");
  EXPECT_EQ(t.Head(1, 1), nullptr);
}

TEST(SequenceTableTest, RequestsOfOneSequenceStayInItsSlotInOrder) {
  Table t(1, 2, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "b", true, false, 0, 10));
  ASSERT_TRUE(Admit(t, "a", false, false, 1, 2));
  ASSERT_TRUE(Admit(t, "a", false, true, 2, 3));
  EXPECT_EQ(TakeAt(t, 0, 0, 3), 1);
  EXPECT_EQ(TakeAt(t, 0, 0, 3), 2);
  bool end = false;
  EXPECT_EQ(TakeAt(t, 0, 0, 3, &end), 3);
  EXPECT_TRUE(end);
  EXPECT_EQ(t.Head(0, 1)->key, "b");
  EXPECT_EQ(t.live_size(), 1u);  // "a" ended
}

TEST(SequenceTableTest, FirstRequestNeedsStart) {
  Table t(1, 1, kIdle);
  EXPECT_FALSE(Admit(t, "a", false, false, 0, 1));
  EXPECT_FALSE(Admit(t, "a", false, true, 0, 1));  // END without START
  EXPECT_EQ(t.live_size(), 0u);
  EXPECT_TRUE(Admit(t, "a", true, true, 0, 1));  // a sequence of one request
}

TEST(SequenceTableTest, AfterEndTheNextRequestNeedsStartEvenBeforeEndRuns) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, true, 0, 1));
  EXPECT_FALSE(Admit(t, "a", false, false, 0, 2));
  EXPECT_TRUE(Admit(t, "a", true, false, 0, 3));  // starts again behind the END
  bool end = false;
  EXPECT_EQ(TakeAt(t, 0, 0, 1, &end), 1);
  EXPECT_TRUE(end);
  EXPECT_EQ(TakeAt(t, 0, 0, 1), 3);  // kept its slot: a request was still waiting
}

TEST(SequenceTableTest, StartOnARunningSequenceRestartsItInPlace) {
  Table t(1, 2, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 2));
  EXPECT_EQ(t.live_size(), 1u);
  EXPECT_EQ(TakeAt(t, 0, 0, 0), 1);
  EXPECT_EQ(TakeAt(t, 0, 0, 0), 2);
  EXPECT_EQ(t.Head(0, 1), nullptr);
}

TEST(SequenceTableTest, BacklogTakesTheSlotFreedByEndOldestFirst) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "b", true, false, 1, 2));
  ASSERT_TRUE(Admit(t, "c", true, false, 2, 3));
  ASSERT_TRUE(Admit(t, "b", false, false, 3, 4));  // queues in the backlog with its sequence
  EXPECT_EQ(t.backlog_size(), 2u);
  EXPECT_EQ(TakeAt(t, 0, 0, 4), 1);
  EXPECT_EQ(t.Head(0, 0), nullptr);  // "a" has not ended: the slot stays its own
  ASSERT_TRUE(Admit(t, "a", false, true, 5, 5));
  EXPECT_EQ(TakeAt(t, 0, 0, 6), 5);
  EXPECT_EQ(t.backlog_size(), 1u);
  EXPECT_EQ(t.Head(0, 0)->key, "b");
  EXPECT_EQ(TakeAt(t, 0, 0, 7), 2);
  EXPECT_EQ(TakeAt(t, 0, 0, 7), 4);
}

TEST(SequenceTableTest, ReaperReleasesIdleSequencesOnTheFakeClock) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "b", true, false, 0, 2));  // backlogged
  EXPECT_EQ(t.NextReapNs(), 0u);                  // "a" has a request waiting: never idle
  EXPECT_EQ(TakeAt(t, 0, 0, 100), 1);
  EXPECT_EQ(t.NextReapNs(), 100 + kIdle);
  EXPECT_TRUE(t.Reap(100 + kIdle - 1).empty());
  EXPECT_EQ(t.Reap(100 + kIdle), std::vector<std::string>{"a"});
  EXPECT_EQ(t.Head(0, 0)->key, "b");                   // promoted
  EXPECT_FALSE(Admit(t, "a", false, false, 2000, 3));  // released: START needed again
}

TEST(SequenceTableTest, ExecutingSequenceIsNotReaped) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  int job = 0;
  bool end = false;
  auto seq = t.Take(t.Head(0, 0), &job, &end);
  EXPECT_TRUE(t.Reap(10 * kIdle).empty());
  t.Finish(seq.get(), 10 * kIdle);
  EXPECT_TRUE(t.Reap(11 * kIdle - 1).empty());
  EXPECT_EQ(t.Reap(11 * kIdle).size(), 1u);
}

TEST(SequenceTableTest, NewRequestPostponesTheIdleRelease) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  EXPECT_EQ(TakeAt(t, 0, 0, 0), 1);
  ASSERT_TRUE(Admit(t, "a", false, false, 900, 2));
  EXPECT_EQ(TakeAt(t, 0, 0, 950), 2);
  EXPECT_TRUE(t.Reap(1500).empty());
  EXPECT_EQ(t.Reap(1950).size(), 1u);
}

TEST(SequenceTableTest, DrainBacklogReturnsWaitingSequences) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "b", true, false, 0, 2));
  auto drained = t.DrainBacklog();
  ASSERT_EQ(drained.size(), 1u);
  EXPECT_EQ(drained[0]->key, "b");
  EXPECT_EQ(drained[0]->pending.front().second, 2);
  EXPECT_EQ(t.live_size(), 1u);
}

// Drop forgets a slot holder and gives its slot to the backlog; DropBacklogged removes backlogged
// sequences whose oldest request matches, wherever they are in the backlog.
TEST(SequenceTableTest, DropFreesTheSlotAndDropBackloggedKeepsTheOthers) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "a", false, false, 0, 2));
  ASSERT_TRUE(Admit(t, "b", true, false, 0, -10));  // "cancelled": negative
  ASSERT_TRUE(Admit(t, "c", true, false, 0, 20));
  ASSERT_TRUE(Admit(t, "d", true, false, 0, -30));
  ASSERT_TRUE(Admit(t, "d", false, false, 0, 31));
  EXPECT_EQ(t.queued(), 6u);
  EXPECT_EQ(t.backlog_queued(), 4u);
  EXPECT_FALSE(t.WouldWaitInBacklog("a"));   // owns the slot
  EXPECT_TRUE(t.WouldWaitInBacklog("b"));    // backlogged
  EXPECT_TRUE(t.WouldWaitInBacklog("new"));  // no free slot
  std::vector<int> jobs;
  EXPECT_EQ(t.DropBacklogged([](int j) { return j < 0; }, &jobs), 2u);
  EXPECT_EQ(jobs, (std::vector<int>{-10, -30, 31}));
  EXPECT_EQ(t.queued(), 3u);
  EXPECT_EQ(t.backlog_queued(), 1u);
  EXPECT_EQ(t.backlog_size(), 1u);
  EXPECT_EQ(t.live_size(), 2u);
  jobs.clear();
  t.Drop(t.Head(0, 0), &jobs);
  EXPECT_EQ(jobs, (std::vector<int>{1, 2}));
  EXPECT_EQ(t.Head(0, 0)->key, "c");  // promoted at once
  EXPECT_EQ(t.queued(), 1u);
  EXPECT_EQ(t.backlog_queued(), 0u);
  EXPECT_FALSE(Admit(t, "a", false, false, 0, 3));  // forgotten: needs START
  EXPECT_EQ(TakeAt(t, 0, 0, 1), 20);
  EXPECT_EQ(t.queued(), 0u);
}

// After a burst the sequence map's buckets are given back (the backlog deque likewise).
TEST(SequenceTableTest, BackloggedSequenceExpiresWholeAtItsEarliestTimeout) {
  Table t(1, 1, kIdle);
  int v = 1;
  ASSERT_TRUE(t.Admit("a", true, false, 0, v, 50));  // owns the slot: its timeout never counts
  v = 2;
  ASSERT_TRUE(t.Admit("b", true, false, 10, v, 100));  // backlog, expires at 110
  v = 3;
  ASSERT_TRUE(t.Admit("b", false, false, 20, v, 60));  // lowers it to 80
  v = 4;
  ASSERT_TRUE(t.Admit("c", true, false, 20, v));  // backlog, no timeout
  EXPECT_TRUE(t.InBacklog("b"));
  EXPECT_FALSE(t.InBacklog("a"));
  EXPECT_EQ(t.NextExpiryNs(), 80u);
  std::vector<int> jobs;
  EXPECT_EQ(t.ExpireBacklog(79, &jobs), 0u);
  EXPECT_EQ(t.ExpireBacklog(80, &jobs), 1u);
  EXPECT_EQ(jobs, (std::vector<int>{2, 3}));
  EXPECT_EQ(t.queued(), 2u);
  EXPECT_EQ(t.backlog_queued(), 1u);
  EXPECT_EQ(t.NextExpiryNs(), 0u);
  v = 5;
  EXPECT_FALSE(t.Admit("b", false, false, 90, v));  // forgotten: the next request needs START
  // The slot holder outlives its own timeout; "c" is next in the backlog.
  EXPECT_EQ(TakeAt(t, 0, 0, 100), 1);
  EXPECT_EQ(t.ExpireBacklog(1000, &jobs), 0u);
}

TEST(SequenceTableTest, PromotedSequenceNoLongerExpires) {
  Table t(1, 1, kIdle);
  int v = 1;
  ASSERT_TRUE(t.Admit("a", true, true, 0, v));
  v = 2;
  ASSERT_TRUE(t.Admit("b", true, false, 0, v, 100));
  EXPECT_EQ(TakeAt(t, 0, 0, 10), 1);  // END frees the slot for "b"
  EXPECT_FALSE(t.InBacklog("b"));
  EXPECT_EQ(t.NextExpiryNs(), 0u);
  std::vector<int> jobs;
  EXPECT_EQ(t.ExpireBacklog(1000, &jobs), 0u);
  EXPECT_EQ(TakeAt(t, 0, 0, 1000), 2);
}

TEST(SequenceTableTest, ShrinkGivesBackTheMemoryOfABurst) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "holder", true, false, 0, 1));
  for (int i = 0; i < 5000; ++i) ASSERT_TRUE(Admit(t, std::to_string(i), true, false, 0, -i - 1));
  const size_t burst_buckets = t.live_bucket_count();
  EXPECT_GE(burst_buckets, 5000u);
  std::vector<int> jobs;
  EXPECT_EQ(t.DropBacklogged([](int j) { return j < 0; }, &jobs), 5000u);
  EXPECT_EQ(t.live_bucket_count(), burst_buckets);  // unordered_map keeps its buckets...
  t.Shrink();
  EXPECT_LT(t.live_bucket_count(), 100u);  // ...until Shrink
  EXPECT_EQ(t.live_size(), 1u);
  EXPECT_EQ(t.Head(0, 0)->key, "holder");
}

// An iterative sequence's rescheduled request goes back to its queue, keeping the slot; once
// released it ends the sequence and its slot goes to the backlog.
TEST(SequenceTableTest, RequeueKeepsTheSlotAndEndIfIdleFreesIt) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, false, 0, 1));
  ASSERT_TRUE(Admit(t, "b", true, false, 0, 2));  // backlogged
  Table::Sequence* s = t.Head(0, 0);
  int job = 0;
  bool end = false;
  auto keep = t.Take(s, &job, &end);
  EXPECT_EQ(t.queued(), 1u);
  EXPECT_FALSE(t.EndIfIdle(keep.get()));  // still executing
  ASSERT_TRUE(t.Requeue(keep.get(), job, 5));
  EXPECT_EQ(t.queued(), 2u);
  EXPECT_EQ(t.Head(0, 0)->key, "a");  // the same slot, before the backlog
  EXPECT_EQ(TakeAt(t, 0, 0, 6), 1);
  EXPECT_TRUE(t.EndIfIdle(keep.get()));
  EXPECT_EQ(t.Head(0, 0)->key, "b");
  EXPECT_FALSE(Admit(t, "a", false, false, 7, 3));  // ended: needs START
}

TEST(SequenceTableTest, RequeueRefusesASequenceThatEnded) {
  Table t(1, 1, kIdle);
  ASSERT_TRUE(Admit(t, "a", true, true, 0, 1));  // START and END
  Table::Sequence* s = t.Head(0, 0);
  int job = 0;
  bool end = false;
  auto keep = t.Take(s, &job, &end);
  EXPECT_TRUE(end);
  EXPECT_FALSE(t.Requeue(keep.get(), job, 1));
  EXPECT_EQ(job, 1);  // untouched: the caller answers it
  EXPECT_EQ(t.queued(), 0u);
}

}  // namespace
}  // namespace nereid
