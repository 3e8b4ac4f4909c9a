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

}  // namespace
}  // namespace nereid
