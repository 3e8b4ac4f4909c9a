// The memory one HTTP connection holds between its requests (issue 21 goal 6: 1,024 connections
// and more). A buffer used only on a rare path (lingering after the last reply) is allocated
// when that path runs, not inside the session: inline, its page stayed resident for every
// connection (4 KiB each, bench/README.md "Goal 6") and split the fields each request touches.
#include <gtest/gtest.h>

#include "frontends/http/http_session.h"

namespace nereid {
namespace {

TEST(HttpSessionSizeTest, SessionObjectStaysUnderTwoKiB) {
  EXPECT_LE(sizeof(http_detail::Session), 2048u) << sizeof(http_detail::Session);
}

}  // namespace
}  // namespace nereid
