#include "python/exit_waiter.h"

#include <gtest/gtest.h>
#include <sys/eventfd.h>
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

TEST(ExitWaiter, ABellWakesTheWaitAndStaysForItsOwner) {
  // The BLS streams' bell (stub_questions.h): readable wakes the wait; Wait does not read it.
  auto waiter = ExitWaiter::Create();
  ASSERT_TRUE(waiter.ok());
  int socket[2];
  int bell[2];
  ASSERT_EQ(pipe(socket), 0);
  ASSERT_EQ(pipe(bell), 0);
  EXPECT_EQ((*waiter)->Wait(0, socket[0], 20, bell[0]), Event::kWoken);  // timed out
  ASSERT_EQ(write(bell[1], "x", 1), 1);
  EXPECT_EQ((*waiter)->Wait(0, socket[0], -1, bell[0]), Event::kReadable);
  EXPECT_EQ((*waiter)->Wait(0, -1, -1, bell[0]), Event::kReadable);  // still rung
  char c = 0;
  ASSERT_EQ(read(bell[0], &c, 1), 1);  // its owner clears it
  EXPECT_EQ((*waiter)->Wait(0, socket[0], 20, bell[0]), Event::kWoken);
  for (int fd : {socket[0], socket[1], bell[0], bell[1]}) close(fd);
}

TEST(ExitWaiter, TheStubsIdleBellWakesTheWaitAlone) {
  // StubProcess::idle_bell (an eventfd the stub rings): readable wakes the wait with nothing else
  // to watch; Wait does not read it.
  auto waiter = ExitWaiter::Create();
  ASSERT_TRUE(waiter.ok());
  const int idle = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(idle, 0);
  EXPECT_EQ((*waiter)->Wait(0, -1, 20, -1, idle), Event::kWoken);  // timed out
  const uint64_t one = 1;
  ASSERT_EQ(write(idle, &one, sizeof(one)), static_cast<ssize_t>(sizeof(one)));
  EXPECT_EQ((*waiter)->Wait(0, -1, -1, -1, idle), Event::kReadable);
  EXPECT_EQ((*waiter)->Wait(0, -1, -1, -1, idle), Event::kReadable);  // still rung
  uint64_t count = 0;
  ASSERT_EQ(read(idle, &count, sizeof(count)), static_cast<ssize_t>(sizeof(count)));
  EXPECT_EQ(count, 1u);
  EXPECT_EQ((*waiter)->Wait(0, -1, 20, -1, idle), Event::kWoken);
  close(idle);
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
