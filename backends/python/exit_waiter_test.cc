#include "python/exit_waiter.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

namespace nereid::backends::python {
namespace {

using Event = ExitWaiter::Event;

TEST(ExitWaiter, ReadableSocketWakesTheWait) {
  auto waiter = ExitWaiter::Create();
  ASSERT_TRUE(waiter.ok());
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  EXPECT_EQ((*waiter)->Wait(0, fds[0], 20), Event::kWoken);  // nothing to read: timed out
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  EXPECT_EQ((*waiter)->Wait(0, fds[0], -1), Event::kReadable);
  (*waiter)->Wake();  // the wake wins over the readable fd, and is consumed
  EXPECT_EQ((*waiter)->Wait(0, fds[0], -1), Event::kWoken);
  EXPECT_EQ((*waiter)->Wait(0, fds[0], -1), Event::kReadable);
  close(fds[0]);
  close(fds[1]);
}

TEST(ExitWaiter, ExitWinsOverAReadableSocket) {
  auto waiter = ExitWaiter::Create();
  ASSERT_TRUE(waiter.ok());
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "x", 1), 1);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(0);
  EXPECT_EQ((*waiter)->Wait(child, -1, -1), Event::kExited);
  // Exited (a zombie until reaped) and a readable pipe at once: the exit is reported.
  EXPECT_EQ((*waiter)->Wait(child, fds[0], -1), Event::kExited);
  waitpid(child, nullptr, 0);
  close(fds[0]);
  close(fds[1]);
}

}  // namespace
}  // namespace nereid::backends::python
