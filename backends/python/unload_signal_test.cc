#include "python/unload_signal.h"

#include <gtest/gtest.h>

namespace nereid::backends::python {
namespace {

TEST(UnloadSignal, NotifyWakesEveryRegisteredInstanceAndLaterOnesAtOnce) {
  UnloadSignal signal;
  int a = 0;
  int b = 0;
  int c = 0;
  signal.Add([&] { ++a; });
  const int id_b = signal.Add([&] { ++b; });
  signal.Remove(id_b);
  EXPECT_FALSE(signal.unloading());
  EXPECT_EQ(a, 0);
  signal.Notify();
  EXPECT_TRUE(signal.unloading());
  EXPECT_EQ(a, 1);
  EXPECT_EQ(b, 0);  // removed: never runs
  signal.Add([&] { ++c; });
  EXPECT_EQ(c, 1);  // an instance started after the notice hears it too
}

}  // namespace
}  // namespace nereid::backends::python
