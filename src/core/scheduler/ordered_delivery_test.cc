// OrderedDelivery: responses completing out of order are delivered in sequence order, each once.
#include "core/scheduler/ordered_delivery.h"

#include <gtest/gtest.h>

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
  std::vector<int> order;  // written under the delivery's mutex only
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

}  // namespace
}  // namespace nereid
