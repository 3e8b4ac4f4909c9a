// OrderedDelivery: responses completing out of order are delivered in sequence order, each once.
#include "core/scheduler/ordered_delivery.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <thread>
#include <vector>

namespace nereid {
namespace {

InferCallback Recorder(std::vector<int>* order, int id) {
  return [order, id](OrderedDelivery::Result) { order->push_back(id); };
}

TEST(OrderedDeliveryTest, InOrderIsImmediate) {
  OrderedDelivery d;
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) {
    InferCallback cb = Recorder(&order, i);
    d.Deliver(i, cb, Internal("x"));
    EXPECT_EQ(order.size(), static_cast<size_t>(i + 1));
  }
}

TEST(OrderedDeliveryTest, EarlyResponsesWaitForTheirTurn) {
  OrderedDelivery d;
  std::vector<int> order;
  for (int i : {2, 3, 1}) {
    InferCallback cb = Recorder(&order, i);
    d.Deliver(i, cb, Internal("x"));
  }
  EXPECT_TRUE(order.empty());  // 0 has not completed
  InferCallback first = Recorder(&order, 0);
  d.Deliver(0, first, Internal("x"));
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3}));
  InferCallback next = Recorder(&order, 4);
  d.Deliver(4, next, Internal("x"));
  EXPECT_EQ(order.back(), 4);
}

TEST(OrderedDeliveryTest, ConcurrentDeliveriesKeepTheOrder) {
  OrderedDelivery d;
  std::vector<int> order;  // written by one delivering thread at a time
  constexpr int kCount = 2000;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = kCount - 1 - t; i >= 0; i -= 4) {  // each thread delivers backwards
        InferCallback cb = Recorder(&order, i);
        d.Deliver(i, cb, Internal("x"));
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(order.size(), static_cast<size_t>(kCount));
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(order[i], i);
}

// Runs `body` on its own thread and reports whether it finished within 10 s. A body that
// deadlocks is left behind (detached); it only touches the state it shares through `body`.
bool FinishesInTime(std::function<void()> body) {
  auto finished = std::make_shared<std::promise<void>>();
  std::future<void> f = finished->get_future();
  std::thread([body = std::move(body), finished] {
    body();
    finished->set_value();
  }).detach();
  return f.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
}

// A callback that calls Deliver itself would self-deadlock if callbacks ran under the lock.
TEST(OrderedDeliveryTest, CallbackMayDeliverTheNextResponse) {
  struct State {
    OrderedDelivery d;
    std::vector<int> order;
  };
  auto s = std::make_shared<State>();
  ASSERT_TRUE(FinishesInTime([s] {
    InferCallback second = Recorder(&s->order, 1);
    InferCallback first = [s, &second](OrderedDelivery::Result) {
      s->order.push_back(0);
      s->d.Deliver(1, second, Internal("x"));
      s->order.push_back(10);  // the nested response waits until this callback returns
    };
    s->d.Deliver(0, first, Internal("x"));
  }));
  EXPECT_EQ(s->order, (std::vector<int>{0, 10, 1}));
}

// A callback that waits for another thread's Deliver would deadlock if it held the lock.
TEST(OrderedDeliveryTest, CallbackMayWaitForADeliveryOnAnotherThread) {
  struct State {
    OrderedDelivery d;
    std::vector<int> order;
  };
  auto s = std::make_shared<State>();
  ASSERT_TRUE(FinishesInTime([s] {
    InferCallback first = [s](OrderedDelivery::Result) {
      s->order.push_back(0);
      std::thread([s] {
        InferCallback second = Recorder(&s->order, 1);
        s->d.Deliver(1, second, Internal("x"));  // parked: this thread returns at once
      }).join();
    };
    s->d.Deliver(0, first, Internal("x"));
  }));
  EXPECT_EQ(s->order, (std::vector<int>{0, 1}));  // delivered by the first thread, in order
}

// Callbacks that take their time while the others arrive: the order and exactly-once still hold,
// and no two callbacks ever run at the same time.
TEST(OrderedDeliveryTest, SlowCallbacksUnderConcurrencyKeepTheOrder) {
  OrderedDelivery d;
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  constexpr int kCount = 400;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = t; i < kCount; i += 4) {
        InferCallback cb = [&, i](OrderedDelivery::Result) {
          if (running.fetch_add(1) != 0) overlapped = true;
          if (i % 7 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
          order.push_back(i);
          running.fetch_sub(1);
        };
        d.Deliver(i, cb, Internal("x"));
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_FALSE(overlapped);
  ASSERT_EQ(order.size(), static_cast<size_t>(kCount));
  for (int i = 0; i < kCount; ++i) EXPECT_EQ(order[i], i);
}

}  // namespace
}  // namespace nereid
