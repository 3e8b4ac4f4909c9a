#include "core/config/model_config_io.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "core/config/test_temp_dir.h"

namespace nereid::config {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

constexpr char kMinimalConfig[] = R"cfg(
name: "mymodel"
platform: "tensorrt_plan"
max_batch_size: 8
input [
  {
    name: "input0"
    data_type: TYPE_FP32
    dims: [ 16 ]
  },
  {
    name: "input1"
    data_type: TYPE_FP32
    dims: [ 16 ]
  }
]
output [
  {
    name: "output0"
    data_type: TYPE_FP32
    dims: [ 16 ]
  }
]
version_policy: { all { }}
)cfg";

TEST(ParseModelConfigTextTest, ParsesTheSpecExample) {
  auto config = ParseModelConfigText(kMinimalConfig, "/repo/mymodel/config.pbtxt");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->name(), "mymodel");
  EXPECT_EQ(config->platform(), "tensorrt_plan");
  EXPECT_EQ(config->max_batch_size(), 8);
  ASSERT_EQ(config->input_size(), 2);
  EXPECT_EQ(config->input(1).name(), "input1");
  EXPECT_EQ(config->input(1).data_type(), inference::TYPE_FP32);
  EXPECT_THAT(config->input(1).dims(), ::testing::ElementsAre(16));
  EXPECT_TRUE(config->version_policy().has_all());
}

TEST(ParseModelConfigTextTest, EmptyTextIsAnEmptyConfig) {
  auto config = ParseModelConfigText("", "config.pbtxt");
  ASSERT_TRUE(config.ok());
  EXPECT_EQ(config->ByteSizeLong(), 0u);
}

TEST(ParseModelConfigTextTest, SyntaxErrorNamesFileLineAndColumn) {
  auto config =
      ParseModelConfigText("name: \"m\"\nmax_batch_size: eight\n", "/repo/m/config.pbtxt");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(config.status().message(),
            "failed to parse /repo/m/config.pbtxt: line 2, column 17: Expected integer, got: "
            "eight");
}

TEST(ParseModelConfigTextTest, UnknownFieldIsAnError) {
  auto config = ParseModelConfigText("name: \"m\"\n  bogus_field: 1\n", "/repo/m/config.pbtxt");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("failed to parse /repo/m/config.pbtxt: line 2, column 14:"));
  EXPECT_THAT(config.status().message(), HasSubstr("no field named \"bogus_field\""));
}

TEST(ParseModelConfigTextTest, UnknownEnumNameIsAnError) {
  auto config = ParseModelConfigText("input [ { name: \"x\" data_type: TYPE_FP99 } ]", "c.pbtxt");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("line 1, column 42"));
  EXPECT_THAT(config.status().message(), HasSubstr("TYPE_FP99"));
}

TEST(ParseModelConfigTextTest, RepeatedSingularFieldIsAnError) {
  auto config = ParseModelConfigText("name: \"a\"\nname: \"b\"\n", "c.pbtxt");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("line 2"));
}

TEST(ParseModelConfigTextTest, InvalidUtf8StringIsAnError) {
  auto config = ParseModelConfigText("parameters { key: \"k\" value { string_value: \"\\xff\" } }",
                                     "c.pbtxt");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("string_value"));
  EXPECT_THAT(config.status().message(), HasSubstr("not valid UTF-8"));
}

TEST(ParseModelConfigTextTest, AcceptsValidUtf8) {
  auto config = ParseModelConfigText("name: \"mod\xc3\xa8le\xe2\x82\xac\xf0\x9f\x98\x80\"", "c");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
}

TEST(ReadModelConfigTest, MissingFileIsNullopt) {
  TempDir dir;
  auto config = ReadModelConfig(dir.path(), "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->has_value());
}

TEST(ReadModelConfigTest, MissingModelDirectoryIsNullopt) {
  TempDir dir;
  auto config = ReadModelConfig(dir.path() / "nope", "");
  ASSERT_TRUE(config.ok());
  EXPECT_FALSE(config->has_value());
}

TEST(ReadModelConfigTest, ReadsConfigPbtxt) {
  TempDir dir;
  dir.WriteFile("config.pbtxt", kMinimalConfig);
  auto config = ReadModelConfig(dir.path(), "");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ((*config)->name(), "mymodel");
}

TEST(ReadModelConfigTest, PrefersNamedConfig) {
  TempDir dir;
  dir.WriteFile("config.pbtxt", "name: \"default\"");
  dir.WriteFile("configs/small.pbtxt", "name: \"small\"");
  auto config = ReadModelConfig(dir.path(), "small");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ((*config)->name(), "small");
}

TEST(ReadModelConfigTest, FallsBackToConfigPbtxtWhenNamedConfigIsMissing) {
  TempDir dir;
  dir.WriteFile("config.pbtxt", "name: \"default\"");
  auto config = ReadModelConfig(dir.path(), "large");
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  ASSERT_TRUE(config->has_value());
  EXPECT_EQ((*config)->name(), "default");
}

TEST(ReadModelConfigTest, RejectsConfigNameWithPath) {
  TempDir dir;
  dir.WriteFile("config.pbtxt", "name: \"default\"");
  auto config = ReadModelConfig(dir.path(), "../other/config");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
}

TEST(ReadModelConfigTest, ParseErrorNamesTheFile) {
  TempDir dir;
  auto path = dir.WriteFile("config.pbtxt", "name: \"m\"\nmax_batch_size: [\n");
  auto config = ReadModelConfig(dir.path(), "");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(),
              HasSubstr("failed to parse " + path.string() + ": line 2, column"));
}

TEST(ReadModelConfigTest, DirectoryInPlaceOfFileIsAnError) {
  TempDir dir;
  dir.MakeDir("config.pbtxt");
  auto config = ReadModelConfig(dir.path(), "");
  ASSERT_FALSE(config.ok());
  EXPECT_THAT(config.status().message(), HasSubstr("not a regular file"));
}

TEST(ReadModelConfigTest, OversizedFileIsAnError) {
  TempDir dir;
  std::string big = "name: \"m\"\n" + std::string(kMaxModelConfigBytes, '#');
  dir.WriteFile("config.pbtxt", big);
  auto config = ReadModelConfig(dir.path(), "");
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(config.status().message(), HasSubstr("larger than 16777216 bytes"));
}

}  // namespace
}  // namespace nereid::config
