#include "frontends/http/http_loop_watch.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>

#include "common/inline_caller.h"

namespace nereid {
namespace http_detail {
namespace {

struct Pair {
  Pair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~Pair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  int fds[2] = {-1, -1};  // [0] is watched (the server's end), [1] is the client
};

TEST(LoopWatchTest, ReportsAWatchedConnectionWithBytesToRead) {
  LoopWatch watch;
  Pair a, b;
  ASSERT_TRUE(watch.Add(a.fds[0]));
  ASSERT_TRUE(watch.Add(b.fds[0]));
  EXPECT_FALSE(watch.OthersWaiting());  // connected, nothing sent
  ASSERT_EQ(write(b.fds[1], "GET", 3), 3);
  EXPECT_TRUE(watch.OthersWaiting());
  EXPECT_TRUE(watch.OthersWaiting());  // level-triggered: asking does not consume it
  char buf[8];
  ASSERT_EQ(read(b.fds[0], buf, sizeof(buf)), 3);
  EXPECT_FALSE(watch.OthersWaiting());  // read: nothing waits any more
}

TEST(LoopWatchTest, APeersCloseWaitsForTheLoopToo) {
  LoopWatch watch;
  Pair a;
  ASSERT_TRUE(watch.Add(a.fds[0]));
  close(a.fds[1]);
  a.fds[1] = -1;
  EXPECT_TRUE(watch.OthersWaiting());
}

TEST(LoopWatchTest, AClosedConnectionLeavesTheWatch) {
  LoopWatch watch;
  auto a = std::make_unique<Pair>();
  ASSERT_TRUE(watch.Add(a->fds[0]));
  ASSERT_EQ(write(a->fds[1], "x", 1), 1);
  EXPECT_TRUE(watch.OthersWaiting());
  close(a->fds[0]);  // the server closes its end with bytes unread
  a->fds[0] = -1;
  EXPECT_FALSE(watch.OthersWaiting());
}

TEST(LoopWatchTest, AnUnwatchableDescriptorIsRefused) {
  LoopWatch watch;
  EXPECT_FALSE(watch.Add(-1));
  EXPECT_FALSE(watch.OthersWaiting());
}

TEST(LoopWatchTest, AnswersTheSchedulerThroughTheInlineCaller) {
  LoopWatch watch;
  Pair a;
  ASSERT_TRUE(watch.Add(a.fds[0]));
  ScopedInlineCaller scope(&watch);
  EXPECT_FALSE(InlineCallerOthersWaiting());
  ASSERT_EQ(write(a.fds[1], "x", 1), 1);
  EXPECT_TRUE(InlineCallerOthersWaiting());
}

}  // namespace
}  // namespace http_detail
}  // namespace nereid
