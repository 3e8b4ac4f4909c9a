#include "core/request/cancel_token.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

namespace nereid {
namespace {

struct SocketPair {
  int fds[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0); }
  ~SocketPair() {
    for (int fd : fds) {
      if (fd >= 0) close(fd);
    }
  }
  void ClosePeer() {
    close(fds[1]);
    fds[1] = -1;
  }
};

TEST(CancelToken, ProbeSeesAClosedPeerOnTheAttachingThreadOnly) {
  SocketPair pair;
  CancelToken token;
  token.AttachPeer(pair.fds[0]);
  EXPECT_FALSE(token.Probe());  // open, nothing to read
  pair.ClosePeer();
  bool other_thread = true;
  std::thread([&] { other_thread = token.Probe(); }).join();
  EXPECT_FALSE(other_thread);  // another thread never peeks: the socket may be closed under it
  EXPECT_TRUE(token.Probe());
  EXPECT_TRUE(token.cancelled());  // what Probe saw stays
  token.DetachPeer();
  EXPECT_TRUE(token.Probe());
}

TEST(CancelToken, ProbeIgnoresPendingBytesAndADetachedSocket) {
  SocketPair pair;
  CancelToken token;
  token.AttachPeer(pair.fds[0]);
  ASSERT_EQ(write(pair.fds[1], "x", 1), 1);  // a pipelined request: the client is still there
  EXPECT_FALSE(token.Probe());
  char byte = 0;
  ASSERT_EQ(read(pair.fds[0], &byte, 1), 1);  // the peek left it to read
  token.DetachPeer();
  pair.ClosePeer();
  EXPECT_FALSE(token.Probe());  // detached: only the frontend's own read notices now
  token.Cancel();
  EXPECT_TRUE(token.Probe());
}

}  // namespace
}  // namespace nereid
