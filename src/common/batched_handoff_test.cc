#include "common/batched_handoff.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

namespace nereid {
namespace {

// What each Post call received: the sink and how many tasks, after running them.
thread_local std::vector<std::pair<int, size_t>> posts;

void RecordPost(const int& sink, std::vector<std::function<void()>> tasks) {
  posts.emplace_back(sink, tasks.size());
  for (auto& t : tasks) t();
}
using Handoff = BatchedHandoff<int, &RecordPost>;

TEST(BatchedHandoffTest, OutsideAScopeNothingIsKept) {
  posts.clear();
  bool ran = false;
  EXPECT_FALSE(Handoff::Queue(1, [&] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_TRUE(posts.empty());
}

TEST(BatchedHandoffTest, OnePostPerSinkWhenTheScopeCloses) {
  posts.clear();
  std::string order;
  {
    CompletionBatch scope;
    EXPECT_TRUE(Handoff::Queue(7, [&] { order += 'a'; }));
    EXPECT_TRUE(Handoff::Queue(9, [&] { order += 'b'; }));
    EXPECT_TRUE(Handoff::Queue(7, [&] { order += 'c'; }));
    EXPECT_TRUE(posts.empty());  // nothing handed on while the batch is open
    EXPECT_TRUE(order.empty());
  }
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[0], std::make_pair(7, size_t{2}));
  EXPECT_EQ(posts[1], std::make_pair(9, size_t{1}));
  EXPECT_EQ(order, "acb");  // sinks in first-queued order, tasks in queued order per sink
}

TEST(BatchedHandoffTest, EachBatchPostsItsOwnTasks) {
  posts.clear();
  for (int round = 0; round < 2; ++round) {
    CompletionBatch scope;
    Handoff::Queue(1, [] {});
  }
  ASSERT_EQ(posts.size(), 2u);
  EXPECT_EQ(posts[1], std::make_pair(1, size_t{1}));  // the first batch's task is not posted again
}

TEST(BatchedHandoffTest, TaskQueuedWhilePostingIsPostedInTheSameRound) {
  posts.clear();
  int runs = 0;
  {
    CompletionBatch scope;
    Handoff::Queue(1, [&] {
      ++runs;
      EXPECT_TRUE(Handoff::Queue(1, [&] { ++runs; }));
    });
  }
  EXPECT_EQ(runs, 2);
  EXPECT_EQ(posts.size(), 2u);
  EXPECT_FALSE(CompletionBatch::Active());
}

TEST(BatchedHandoffTest, ScopesArePerThread) {
  posts.clear();
  CompletionBatch scope;
  bool queued_elsewhere = true;
  std::thread([&] { queued_elsewhere = Handoff::Queue(1, [] {}); }).join();
  EXPECT_FALSE(queued_elsewhere);
}

}  // namespace
}  // namespace nereid
