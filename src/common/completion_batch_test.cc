#include "common/completion_batch.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace nereid {
namespace {

TEST(CompletionBatchTest, OutsideAScopeNothingIsDeferred) {
  EXPECT_FALSE(CompletionBatch::Active());
  bool ran = false;
  EXPECT_FALSE(CompletionBatch::Defer([&] { ran = true; }));
  EXPECT_FALSE(ran);
}

TEST(CompletionBatchTest, OutermostScopeFlushesInOrder) {
  std::vector<int> order;
  {
    CompletionBatch outer;
    EXPECT_TRUE(CompletionBatch::Active());
    EXPECT_TRUE(CompletionBatch::Defer([&] { order.push_back(1); }));
    {
      CompletionBatch inner;
      EXPECT_TRUE(CompletionBatch::Defer([&] { order.push_back(2); }));
    }
    EXPECT_TRUE(order.empty());  // the inner scope does not flush
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  EXPECT_FALSE(CompletionBatch::Active());
}

TEST(CompletionBatchTest, WorkDeferredWhileFlushingRunsInTheSameRound) {
  std::vector<int> order;
  {
    CompletionBatch scope;
    CompletionBatch::Defer([&] {
      order.push_back(1);
      EXPECT_TRUE(CompletionBatch::Defer([&] { order.push_back(2); }));
    });
  }
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
  { CompletionBatch scope; }  // nothing is left over to run twice
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(CompletionBatchTest, ScopesArePerThread) {
  CompletionBatch scope;
  bool other_active = true;
  std::thread([&] { other_active = CompletionBatch::Active(); }).join();
  EXPECT_FALSE(other_active);
}

}  // namespace
}  // namespace nereid
