// Every transition of an HTTP connection's lifecycle, against the diagram in http_session_state.h.
#include "frontends/http/http_session_state.h"

#include <gtest/gtest.h>

#include <set>
#include <utility>

namespace nereid {
namespace {

using S = SessionState;
constexpr S kAll[] = {S::kOpen, S::kReadClosed, S::kLingering, S::kClosed};

TEST(SessionStateTest, EveryTransitionIsLegalOnlyIfTheDiagramHasIt) {
  const std::set<std::pair<S, S>> legal = {{S::kOpen, S::kReadClosed},
                                           {S::kOpen, S::kClosed},
                                           {S::kReadClosed, S::kLingering},
                                           {S::kReadClosed, S::kClosed},
                                           {S::kLingering, S::kClosed}};
  for (S from : kAll) {
    for (S to : kAll) {
      const bool expected = legal.count({from, to}) != 0;
      EXPECT_EQ(IsLegalTransition(from, to), expected)
          << SessionStateName(from) << " -> " << SessionStateName(to);
    }
  }
}

TEST(SessionStateTest, MovesAlongTheDiagramAndRefusesTheRest) {
  SessionLifecycle s;
  EXPECT_EQ(s.state(), S::kOpen);
  Status bad = s.MoveTo(S::kLingering);  // the replies owed come first
  EXPECT_EQ(bad.code(), StatusCode::kInternal);
  EXPECT_EQ(bad.message(), "illegal HTTP session transition OPEN -> LINGERING");
  EXPECT_EQ(s.state(), S::kOpen);
  ASSERT_TRUE(s.MoveTo(S::kReadClosed).ok());
  EXPECT_FALSE(s.MoveTo(S::kOpen).ok());  // a connection never reads again
  ASSERT_TRUE(s.MoveTo(S::kLingering).ok());
  EXPECT_FALSE(s.MoveTo(S::kReadClosed).ok());
  ASSERT_TRUE(s.MoveTo(S::kClosed).ok());
  for (S to : kAll) {
    EXPECT_FALSE(s.MoveTo(to).ok()) << SessionStateName(to);  // closed is final
  }
  EXPECT_EQ(s.state(), S::kClosed);
}

}  // namespace
}  // namespace nereid
