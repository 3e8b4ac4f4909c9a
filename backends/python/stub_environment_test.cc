#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "python/stub_process.h"

namespace nereid::backends::python {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& var) {
  return std::find(env.begin(), env.end(), var) != env.end();
}

bool HasPrefix(const std::vector<std::string>& env, const std::string& prefix) {
  return std::any_of(env.begin(), env.end(),
                     [&](const std::string& v) { return v.starts_with(prefix); });
}

TEST(StubEnvironment, WithoutAnEnvironmentOnlyPythonPathChanges) {
  std::string a = "PATH=/usr/bin", b = "PYTHONPATH=/x", c = "VIRTUAL_ENV=/inherited",
              d = "NEREID_EXECUTION_ENV=/sneaky", e = "HOME=/root";
  char* parent[] = {a.data(), b.data(), c.data(), d.data(), e.data(), nullptr};
  StubCommand command;
  command.resources = "/res";
  const auto env = StubEnvironment(command, parent);
  EXPECT_TRUE(Has(env, "PATH=/usr/bin"));
  EXPECT_TRUE(Has(env, "PYTHONPATH=/res:/x"));
  EXPECT_TRUE(Has(env, "VIRTUAL_ENV=/inherited"));
  EXPECT_TRUE(Has(env, "HOME=/root"));
  EXPECT_FALSE(HasPrefix(env, "NEREID_EXECUTION_ENV="));
}

TEST(StubEnvironment, AnEnvironmentIsSetAsActivateWould) {
  std::string a = "PATH=/usr/bin", b = "PYTHONHOME=/old", c = "VIRTUAL_ENV=/inherited";
  char* parent[] = {a.data(), b.data(), c.data(), nullptr};
  StubCommand command;
  command.resources = "/res";
  command.execution_env = "/envs/e";
  const auto env = StubEnvironment(command, parent);
  EXPECT_TRUE(Has(env, "PATH=/envs/e/bin:/usr/bin"));
  EXPECT_TRUE(Has(env, "VIRTUAL_ENV=/envs/e"));
  EXPECT_TRUE(Has(env, "NEREID_EXECUTION_ENV=/envs/e"));
  EXPECT_TRUE(Has(env, "PYTHONPATH=/res"));
  EXPECT_FALSE(HasPrefix(env, "PYTHONHOME="));
  EXPECT_FALSE(Has(env, "VIRTUAL_ENV=/inherited"));
}

}  // namespace
}  // namespace nereid::backends::python
