#include "core/request/index_marks.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

TEST(IndexMarksTest, InlineAndLargeMarkEachPositionAlone) {
  for (size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{65}, size_t{200}}) {
    IndexMarks m(n);
    for (size_t i = 0; i < n; ++i) ASSERT_FALSE(m.IsSet(i)) << n << " " << i;
    for (size_t i = 0; i < n; i += 2) m.Set(i);
    for (size_t i = 0; i < n; ++i) EXPECT_EQ(m.IsSet(i), i % 2 == 0) << n << " " << i;
    m.Set(n - 1);
    EXPECT_TRUE(m.IsSet(n - 1)) << n;
  }
}

}  // namespace
}  // namespace nereid
