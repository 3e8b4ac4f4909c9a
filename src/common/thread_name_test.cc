#include "common/thread_name.h"

#include <gtest/gtest.h>

#include <thread>

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

}  // namespace
}  // namespace nereid
