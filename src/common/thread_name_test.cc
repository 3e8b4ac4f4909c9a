#include "common/thread_name.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <future>
#include <thread>
#include <utility>

namespace nereid {
namespace {

// The name another thread ends up with after NameThisThread(name).
std::string NameOnANewThread(const std::string& name) {
  std::string inside;
  std::thread t([&] {
    NameThisThread(name);
    inside = ThisThreadName();
  });
  t.join();
  return inside;
}

TEST(ThreadNameTest, NamesTheCallingThreadOnly) {
  const std::string before = ThisThreadName();
  EXPECT_EQ(NameOnANewThread("executor"), "executor");
  EXPECT_EQ(ThisThreadName(), before);
}

TEST(ThreadNameTest, CutsLongNamesToFifteenBytes) {
  EXPECT_EQ(NameOnANewThread("a-very-long-thread-name"), "a-very-long-thr");
}

// Starts a thread named `name` whose body waits until the creator has read the thread's name
// (so only the creator can have named it, and the thread is alive when read); returns the name
// the creator read and the one the thread then saw itself.
std::pair<std::string, std::string> NamesSeenFromStart(const std::string& name) {
  std::promise<void> read;
  std::shared_future<void> was_read = read.get_future().share();
  std::string inside;
  std::thread t = StartNamedThread(name, [&inside, was_read] {
    was_read.wait();
    inside = ThisThreadName();
  });
  char buf[16] = {};
  const int got = pthread_getname_np(t.native_handle(), buf, sizeof(buf));
  read.set_value();
  t.join();
  return {got == 0 ? std::string(buf) : "<unreadable>", inside};
}

TEST(ThreadNameTest, StartNamedThreadNamesItBeforeReturning) {
  EXPECT_EQ(NamesSeenFromStart("grpc-cq"),
            std::make_pair(std::string("grpc-cq"), std::string("grpc-cq")));
}

TEST(ThreadNameTest, StartNamedThreadCutsLongNames) {
  EXPECT_EQ(NamesSeenFromStart("a-very-long-thread-name").first, "a-very-long-thr");
}

}  // namespace
}  // namespace nereid
