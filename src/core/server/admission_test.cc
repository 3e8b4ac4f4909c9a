#include "core/server/admission.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace nereid {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

TEST(AdmissionTest, TicketsCountUntilDestroyed) {
  auto a = Admission::Create();
  {
    auto t1 = a->Enter();
    auto t2 = a->Enter();
    ASSERT_TRUE(t1 && t2);
    EXPECT_EQ(a->inflight(), 2);
    Admission::Ticket moved = std::move(*t1);
    t1.reset();
    EXPECT_EQ(a->inflight(), 2);  // a moved-from ticket releases nothing
  }
  EXPECT_EQ(a->inflight(), 0);
}

TEST(AdmissionTest, ClosedRefusesNewTicketsAndKeepsTheOnesOut) {
  auto a = Admission::Create();
  auto out = a->Enter();
  a->Close();
  EXPECT_TRUE(a->closed());
  EXPECT_FALSE(a->Enter().has_value());
  EXPECT_EQ(a->inflight(), 1);
  EXPECT_FALSE(a->WaitDrained(steady_clock::now() + milliseconds(20)));
  out.reset();
  EXPECT_TRUE(a->WaitDrained(steady_clock::now()));
}

TEST(AdmissionTest, TicketOutlivingItsServerIsSafe) {
  std::optional<Admission::Ticket> late;
  {
    auto a = Admission::Create();
    late = a->Enter();
  }  // the server's reference is gone; the ticket keeps the counter alive
  late.reset();
  SUCCEED();
}

TEST(AdmissionTest, NoTicketIsGrantedAfterCloseUnderConcurrency) {
  // Whatever the interleaving, once Close() returned and the count drained, no Enter succeeds;
  // every ticket granted is counted until released.
  for (int round = 0; round < 50; ++round) {
    auto a = Admission::Create();
    std::atomic<bool> closed{false};
    std::atomic<int> granted_after_close{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&] {
        for (int i = 0; i < 500; ++i) {
          const bool was_closed = closed.load();
          auto ticket = a->Enter();
          if (ticket && was_closed) granted_after_close.fetch_add(1);
        }
      });
    }
    a->Close();
    closed.store(true);
    for (auto& th : threads) th.join();
    EXPECT_EQ(granted_after_close.load(), 0);
    EXPECT_EQ(a->inflight(), 0);
  }
}

}  // namespace
}  // namespace nereid
