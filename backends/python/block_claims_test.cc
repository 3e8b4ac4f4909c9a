#include "python/block_claims.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace nereid::backends::python {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::UnorderedElementsAre;

TEST(BlockClaims, BlockOfAGroupIsFreedWhenItCloses) {
  BlockClaims c;
  c.Open(1);
  c.Claim(64, 1);
  c.Open(2);
  c.Claim(128, 2);
  EXPECT_THAT(c.TakeLoose(), IsEmpty());
  c.Close(2);  // the later execution ends first: only its block goes
  EXPECT_THAT(c.TakeLoose(), ElementsAre(128));
  EXPECT_FALSE(c.empty());
  c.Close(1);
  EXPECT_THAT(c.TakeLoose(), ElementsAre(64));
  EXPECT_TRUE(c.empty());
}

TEST(BlockClaims, SharedBlockLivesUntilEveryClaimingGroupCloses) {
  BlockClaims c;
  c.Open(1);
  c.Open(2);
  c.ClaimByAll(0);
  c.Close(1);
  EXPECT_THAT(c.TakeLoose(), IsEmpty());
  c.Open(3);  // opened after the block was written: no claim
  c.Close(2);
  EXPECT_THAT(c.TakeLoose(), ElementsAre(0));
  c.Close(3);
  EXPECT_TRUE(c.empty());
}

TEST(BlockClaims, BlocksWithoutAnOpenGroupAreLooseAtOnce) {
  BlockClaims c;
  c.ClaimByAll(64);
  c.Claim(128, 7);  // unknown group
  EXPECT_THAT(c.TakeLoose(), UnorderedElementsAre(64, 128));
  EXPECT_THAT(c.TakeLoose(), IsEmpty());
  c.Close(7);  // unknown: nothing happens
  EXPECT_TRUE(c.empty());
}

TEST(BlockClaims, ClearForgetsEverything) {
  BlockClaims c;
  c.Open(1);
  c.Claim(64, 1);
  c.ClaimByAll(0);
  c.Clear();
  EXPECT_TRUE(c.empty());
  EXPECT_THAT(c.TakeLoose(), IsEmpty());
}

}  // namespace
}  // namespace nereid::backends::python
