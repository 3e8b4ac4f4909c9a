#include "python/spin_wait.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <thread>

namespace nereid::backends::python {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;

TEST(SpinPolicy, SpinsUntilAMissThenBacksOffDoublingUpTo64Waits) {
  SpinPolicy policy(nanoseconds(5000));
  EXPECT_EQ(policy.Next(), nanoseconds(5000));
  policy.Miss();  // one wait without a spin
  EXPECT_EQ(policy.Next(), nanoseconds(0));
  EXPECT_EQ(policy.Next(), nanoseconds(5000));
  policy.Miss();  // two
  EXPECT_EQ(policy.Next(), nanoseconds(0));
  EXPECT_EQ(policy.Next(), nanoseconds(0));
  EXPECT_EQ(policy.Next(), nanoseconds(5000));
  for (int i = 0; i < 10; ++i) {
    policy.Miss();
    while (policy.Next() == nanoseconds(0)) {
    }
  }
  policy.Miss();  // the back-off stops growing at 64
  int skipped = 0;
  while (policy.Next() == nanoseconds(0)) ++skipped;
  EXPECT_EQ(skipped, 64);
}

TEST(SpinPolicy, AHitEndsTheBackOff) {
  SpinPolicy policy(nanoseconds(5000));
  policy.Miss();
  EXPECT_EQ(policy.Next(), nanoseconds(0));
  EXPECT_EQ(policy.Next(), nanoseconds(5000));
  policy.Miss();
  policy.Next();
  policy.Next();
  policy.Hit();
  policy.Miss();  // back to one skipped wait, not four
  EXPECT_EQ(policy.Next(), nanoseconds(0));
  EXPECT_EQ(policy.Next(), nanoseconds(5000));
}

TEST(SpinPolicy, ZeroBudgetNeverSpins) {
  SpinPolicy policy(nanoseconds(0));
  EXPECT_EQ(policy.Next(), nanoseconds(0));
  policy.Hit();
  EXPECT_EQ(policy.Next(), nanoseconds(0));
}

TEST(SpinBudget, UnsetIsOffAndAValueIsMicroseconds) {
  EXPECT_EQ(*SpinBudget(nullptr, true), nanoseconds(0));
  EXPECT_EQ(*SpinBudget("0", true), nanoseconds(0));
  EXPECT_EQ(*SpinBudget("50", true), std::chrono::microseconds(50));
  EXPECT_EQ(*SpinBudget("1000", true), std::chrono::microseconds(1000));
}

TEST(SpinBudget, OneCpuNeverSpins) { EXPECT_EQ(*SpinBudget("50", false), nanoseconds(0)); }

TEST(SpinBudget, AnythingButAWholeNumberUpTo1000IsRefused) {
  for (const char* bad : {"", "-1", "1001", "5x", "1e3", " 50", "99999", "0x10"}) {
    StatusOr<nanoseconds> got = SpinBudget(bad, true);
    ASSERT_FALSE(got.ok()) << bad;
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(got.status().message(),
              std::string("NEREID_PYTHON_SPIN_US must be a whole number of microseconds from 0 "
                          "to 1000, got '") +
                  bad + "'");
  }
}

class SpinRecvTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds_), 0); }
  void TearDown() override {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  int fds_[2] = {-1, -1};
  char buf_[16] = {};
};

TEST_F(SpinRecvTest, ReturnsBytesAlreadyThere) {
  ASSERT_EQ(write(fds_[1], "abc", 3), 3);
  EXPECT_EQ(SpinRecv(fds_[0], buf_, sizeof(buf_), nanoseconds(0)), 3);
  EXPECT_EQ(std::string(buf_, 3), "abc");
}

TEST_F(SpinRecvTest, ReturnsBytesThePeerWritesDuringTheSpin) {
  std::thread writer([this] { ASSERT_EQ(write(fds_[1], "xy", 2), 2); });
  // The budget is far longer than the writer needs: the spin ends when the bytes come.
  EXPECT_EQ(SpinRecv(fds_[0], buf_, sizeof(buf_), seconds(30)), 2);
  writer.join();
  EXPECT_EQ(std::string(buf_, 2), "xy");
}

TEST_F(SpinRecvTest, EndOfFileDuringTheSpinIsZero) {
  std::thread closer([this] {
    close(fds_[1]);
    fds_[1] = -1;
  });
  EXPECT_EQ(SpinRecv(fds_[0], buf_, sizeof(buf_), seconds(30)), 0);
  closer.join();
}

TEST_F(SpinRecvTest, NothingWithinTheBudgetIsEagain) {
  errno = 0;
  EXPECT_EQ(SpinRecv(fds_[0], buf_, sizeof(buf_), nanoseconds(1000)), -1);
  EXPECT_EQ(errno, EAGAIN);
}

TEST_F(SpinRecvTest, AnErrorOtherThanEagainEndsTheSpin) {
  errno = 0;
  EXPECT_EQ(SpinRecv(-1, buf_, sizeof(buf_), seconds(30)), -1);
  EXPECT_EQ(errno, EBADF);
}

TEST(MayRunOnSeveralCpus, FalseForAThreadPinnedToOneCpu) {
  bool pinned = true;
  std::thread t([&pinned] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    pinned = MayRunOnSeveralCpus();
  });
  t.join();
  EXPECT_FALSE(pinned);
}

TEST(MayRunOnSeveralCpus, TrueWhenTheAffinityHasTwoCpus) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  if (CPU_COUNT(&set) < 2) GTEST_SKIP() << "this process may run on one CPU only";
  EXPECT_TRUE(MayRunOnSeveralCpus());
}

}  // namespace
}  // namespace nereid::backends::python
