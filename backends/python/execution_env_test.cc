#include "python/execution_env.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/config_json.h"

namespace nereid::backends::python {
namespace {

namespace fs = std::filesystem;

class ExecutionEnvTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("nereid_env_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    model_dir_ = root_ / "m";
    fs::create_directories(model_dir_ / "env" / "bin");
    std::ofstream(model_dir_ / "env" / "bin" / "activate") << "# activate\n";
    fs::create_directories(root_ / "outside" / "bin");
    std::ofstream(root_ / "outside" / "bin" / "activate") << "# activate\n";
    std::ofstream(model_dir_ / "env.tar.gz") << "not really";
  }
  void TearDown() override { fs::remove_all(root_); }

  StatusOr<std::string> Resolve(const std::string& params_json) {
    rapidjson::Document doc;
    EXPECT_TRUE(ParseJsonObject(params_json, "config", &doc).ok()) << params_json;
    return ExecutionEnvPath(doc, model_dir_.string());
  }
  static std::string Env(const std::string& path) {
    return R"({"parameters":{"EXECUTION_ENV_PATH":{"string_value":")" + path + R"("}}})";
  }

  fs::path root_;
  fs::path model_dir_;
};

TEST_F(ExecutionEnvTest, NoParameterIsNoEnvironment) {
  auto r = Resolve(R"({"parameters":{"OTHER":{"string_value":"x"}}})");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "");
  r = Resolve("{}");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "");
}

TEST_F(ExecutionEnvTest, ModelDirectoryIsExpanded) {
  auto r = Resolve(Env("$$TRITON_MODEL_DIRECTORY/env"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, fs::weakly_canonical(model_dir_ / "env").string());
}

TEST_F(ExecutionEnvTest, AbsolutePathOutsideTheModelIsAllowed) {
  auto r = Resolve(Env((root_ / "outside").string()));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, fs::weakly_canonical(root_ / "outside").string());
}

TEST_F(ExecutionEnvTest, ModelDirectoryPathMayNotEscape) {
  auto r = Resolve(Env("$$TRITON_MODEL_DIRECTORY/../outside"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(r.status().message()).find("resolves outside the model directory"),
            std::string::npos)
      << r.status().message();
  // A sibling whose name starts with the model directory's is outside too.
  fs::create_directories(root_ / "m2" / "bin");
  std::ofstream(root_ / "m2" / "bin" / "activate") << "\n";
  EXPECT_FALSE(Resolve(Env("$$TRITON_MODEL_DIRECTORY/../m2")).ok());
  // So is a symlink inside the model pointing out of it.
  fs::create_directory_symlink(root_ / "outside", model_dir_ / "link");
  EXPECT_FALSE(Resolve(Env("$$TRITON_MODEL_DIRECTORY/link")).ok());
}

TEST_F(ExecutionEnvTest, MissingActivateHasTritonsText) {
  fs::create_directories(model_dir_ / "bare");
  auto r = Resolve(Env("$$TRITON_MODEL_DIRECTORY/bare"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "Path " + (model_dir_ / "bare").string() +
                "/bin/activate does not exist. The Python environment should contain an "
                "'activate' script.");
  EXPECT_FALSE(Resolve(Env((root_ / "missing").string())).ok());
}

TEST_F(ExecutionEnvTest, TarballIsRefusedClearly) {
  auto r = Resolve(Env("$$TRITON_MODEL_DIRECTORY/env.tar.gz"));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(std::string(r.status().message()).find("only directory environments"),
            std::string::npos);
}

TEST_F(ExecutionEnvTest, NonStringValueIsRefused) {
  auto r = Resolve(R"({"parameters":{"EXECUTION_ENV_PATH":{"string_value":3}}})");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "EXECUTION_ENV_PATH must have a string_value");
}

}  // namespace
}  // namespace nereid::backends::python
