#include "core/repository/version_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace nereid {
namespace {

using S = VersionState;
constexpr S kAll[] = {S::kNone, S::kLoading, S::kReady, S::kFailed, S::kUnloading, S::kUnloaded};

// Every pair, against the diagram in version_state.h.
TEST(VersionStateTest, EveryTransitionIsLegalOnlyIfTheDiagramHasIt) {
  const std::set<std::pair<S, S>> legal = {
      {S::kNone, S::kLoading},       {S::kLoading, S::kLoading},   {S::kLoading, S::kReady},
      {S::kLoading, S::kFailed},     {S::kLoading, S::kUnloaded},  {S::kReady, S::kReady},
      {S::kReady, S::kUnloading},    {S::kFailed, S::kLoading},    {S::kFailed, S::kUnloaded},
      {S::kUnloading, S::kUnloaded}, {S::kUnloading, S::kLoading}, {S::kUnloaded, S::kLoading},
      {S::kUnloaded, S::kUnloaded}};
  for (S from : kAll) {
    for (S to : kAll) {
      EXPECT_EQ(IsLegalTransition(from, to), legal.count({from, to}) != 0)
          << VersionStateName(from) << " -> " << VersionStateName(to);
    }
  }
}

TEST(VersionStateTest, AnIllegalMoveChangesNothing) {
  VersionLifecycle v;
  Status s = v.MoveTo(S::kReady);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "illegal model version transition NONE -> READY");
  EXPECT_EQ(v.state(), S::kNone);

  ASSERT_TRUE(v.MoveTo(S::kLoading).ok());
  ASSERT_TRUE(v.MoveTo(S::kFailed, "bad model").ok());
  EXPECT_EQ(v.reason(), "bad model");
  EXPECT_FALSE(v.MoveTo(S::kUnloading).ok());
  EXPECT_EQ(v.state(), S::kFailed);
  EXPECT_EQ(v.reason(), "bad model");
}

TEST(VersionStateTest, AFullLifecycleAndOnlyFailuresKeepAReason) {
  VersionLifecycle v;
  for (S to : {S::kLoading, S::kReady, S::kReady, S::kUnloading, S::kLoading, S::kFailed,
               S::kLoading, S::kReady, S::kUnloading, S::kUnloaded, S::kUnloaded, S::kLoading}) {
    ASSERT_TRUE(v.MoveTo(to, "why").ok()) << VersionStateName(to);
    EXPECT_EQ(v.state(), to);
    EXPECT_EQ(v.reason(), to == S::kFailed ? "why" : "");
  }
}

}  // namespace
}  // namespace nereid
