#include "nereid/status.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

StatusOr<int> FromStatus(Status s) { return s; }

TEST(StatusOrTest, HoldsAValueOrAnError) {
  StatusOr<int> v = 3;
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3);
  EXPECT_TRUE(v.status().ok());

  StatusOr<int> e = NotFound("no such model");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(e.status().message(), "no such model");
}

// An OK status carries no value: a caller that checks ok() would otherwise read a value that is
// not there. Every build type turns it into an Internal error (not only debug builds' assert).
TEST(StatusOrTest, BuiltFromAnOkStatusIsAnInternalError) {
  StatusOr<int> r = FromStatus(Status::Ok());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInternal);
  EXPECT_EQ(r.status().message(), "StatusOr built from an OK status");
}

}  // namespace
}  // namespace nereid
