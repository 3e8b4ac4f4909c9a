#include "common/inline_caller.h"

#include <gtest/gtest.h>

#include <thread>

#include "common/inline_caller_test_support.h"

namespace nereid {
namespace {

using test_support::FixedInlineCaller;

TEST(InlineCallerTest, AThreadWithoutACallerHasNothingWaiting) {
  EXPECT_FALSE(InlineCallerOthersWaiting());
}

TEST(InlineCallerTest, TheScopesCallerAnswersAndScopesNest) {
  FixedInlineCaller busy(true);
  FixedInlineCaller idle(false);
  {
    ScopedInlineCaller outer(&busy);
    EXPECT_TRUE(InlineCallerOthersWaiting());
    {
      ScopedInlineCaller inner(&idle);
      EXPECT_FALSE(InlineCallerOthersWaiting());
      {
        ScopedInlineCaller none(nullptr);
        EXPECT_FALSE(InlineCallerOthersWaiting());
      }
    }
    EXPECT_TRUE(InlineCallerOthersWaiting());  // the outer caller is back
  }
  EXPECT_FALSE(InlineCallerOthersWaiting());
  EXPECT_EQ(busy.asked.load(), 2);
  EXPECT_EQ(idle.asked.load(), 1);
}

TEST(InlineCallerTest, TheCallerBelongsToTheThreadThatInstalledIt) {
  FixedInlineCaller busy(true);
  ScopedInlineCaller scope(&busy);
  bool other_thread = true;
  std::thread([&] { other_thread = InlineCallerOthersWaiting(); }).join();
  EXPECT_FALSE(other_thread);
  EXPECT_TRUE(InlineCallerOthersWaiting());
}

}  // namespace
}  // namespace nereid
