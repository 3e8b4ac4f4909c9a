#include "core/request/request_limits.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

// The frontends share these texts; e2e tests match on them over HTTP and gRPC.
TEST(RequestLimitsTest, MessagesNameTheLimit) {
  EXPECT_EQ(TooManyRequestParameters().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(TooManyRequestParameters().message(),
            "inference request exceeds the limit of 1024 parameters");
  EXPECT_EQ(TooManyInputParameters().message(),
            "inference request exceeds the limit of 1024 parameters per input");
  EXPECT_EQ(TooManyOutputParameters().message(),
            "inference request exceeds the limit of 1024 parameters per requested output");
  EXPECT_EQ(TooManyInputs().message(), "inference request exceeds the limit of 4096 inputs");
  EXPECT_EQ(TooManyOutputs().message(),
            "inference request exceeds the limit of 4096 requested outputs");
}

}  // namespace
}  // namespace nereid
