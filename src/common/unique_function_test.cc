#include "common/unique_function.h"

#include <gtest/gtest.h>

#include <array>
#include <memory>
#include <string>

namespace nereid {
namespace {

TEST(UniqueFunctionTest, EmptyUntilGivenACallable) {
  UniqueFunction<int(int)> f;
  EXPECT_FALSE(f);
  EXPECT_TRUE(f == nullptr);
  f = [](int x) { return x + 1; };
  ASSERT_TRUE(f);
  EXPECT_EQ(f(41), 42);
  f = nullptr;
  EXPECT_FALSE(f);
}

TEST(UniqueFunctionTest, HoldsAMoveOnlyCallableAndDestroysItOnce) {
  auto owned = std::make_shared<int>(7);
  std::weak_ptr<int> watch = owned;
  {
    UniqueFunction<int()> f = [p = std::make_unique<std::shared_ptr<int>>(std::move(owned))]() {
      return **p;
    };
    EXPECT_EQ(f(), 7);
    UniqueFunction<int()> g = std::move(f);
    EXPECT_FALSE(f);  // NOLINT(bugprone-use-after-move): moving empties the source
    EXPECT_EQ(g(), 7);
    EXPECT_FALSE(watch.expired());
  }
  EXPECT_TRUE(watch.expired());
}

TEST(UniqueFunctionTest, ALargeCallableLivesOnTheHeapAndMovesByPointer) {
  std::array<char, 200> big{};
  big[199] = 'z';
  auto count = std::make_shared<int>(0);
  UniqueFunction<char()> f = [big, count]() {
    ++*count;
    return big[199];
  };
  UniqueFunction<char()> g;
  g = std::move(f);
  EXPECT_EQ(g(), 'z');
  EXPECT_EQ(*count, 1);
  EXPECT_EQ(count.use_count(), 2);
  g = nullptr;
  EXPECT_EQ(count.use_count(), 1);
}

TEST(UniqueFunctionTest, ASmallCallableStaysInline) {
  // Observable through the allocation count: a lambda of 56 bytes (an HTTP reply's closure) must
  // not be copied to the heap, so its address is inside the function object.
  struct Probe {
    std::shared_ptr<int> a;
    std::string s;
    const void* seen = nullptr;
    const void* operator()() { return this; }
  };
  static_assert(sizeof(Probe) <= UniqueFunction<const void*()>::kInlineBytes);
  UniqueFunction<const void*()> f = Probe{};
  const void* at = f();
  EXPECT_GE(static_cast<const char*>(at), reinterpret_cast<const char*>(&f));
  EXPECT_LT(static_cast<const char*>(at), reinterpret_cast<const char*>(&f) + sizeof(f));
  UniqueFunction<const void*()> g = std::move(f);
  EXPECT_GE(static_cast<const char*>(g()), reinterpret_cast<const char*>(&g));
}

TEST(UniqueFunctionTest, AnEmptyStdFunctionOrNullPointerGivesAnEmptyFunction) {
  std::function<void()> empty;
  UniqueFunction<void()> f = empty;
  EXPECT_FALSE(f);
  void (*null)() = nullptr;
  UniqueFunction<void()> g = null;
  EXPECT_FALSE(g);
}

TEST(UniqueFunctionTest, ForwardsMoveOnlyArguments) {
  UniqueFunction<int(std::unique_ptr<int>)> f = [](std::unique_ptr<int> p) { return *p; };
  EXPECT_EQ(f(std::make_unique<int>(5)), 5);
}

}  // namespace
}  // namespace nereid
