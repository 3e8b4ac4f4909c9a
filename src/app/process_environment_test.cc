#include "app/process_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace nereid {
namespace {

const std::string kName(kOrtTelemetryVariable);

TEST(ProcessEnvironmentTest, TurnsOrtTelemetryOffWhenUnset) {
  unsetenv(kName.c_str());
  SetLibraryEnvironmentDefaults();
  ASSERT_NE(getenv(kName.c_str()), nullptr);
  EXPECT_STREQ(getenv(kName.c_str()), "1");
  unsetenv(kName.c_str());
}

TEST(ProcessEnvironmentTest, KeepsAValueTheUserExported) {
  setenv(kName.c_str(), "0", 1);
  SetLibraryEnvironmentDefaults();
  EXPECT_STREQ(getenv(kName.c_str()), "0");
  unsetenv(kName.c_str());
}

}  // namespace
}  // namespace nereid
