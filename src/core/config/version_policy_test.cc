#include "core/config/version_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/config/test_temp_dir.h"

namespace nereid::config {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using testing::TempDir;

TEST(ParseVersionTest, OnlyCanonicalDecimalNames) {
  EXPECT_EQ(ParseVersion("0"), 0);
  EXPECT_EQ(ParseVersion("12"), 12);
  EXPECT_EQ(ParseVersion("9223372036854775807"), INT64_MAX);
  for (const char* bad : {"", "007", "01", "-1", "+1", "1a", " 1", "v1", "9223372036854775808"}) {
    EXPECT_EQ(ParseVersion(bad), std::nullopt) << bad;
  }
}

TEST(ListVersionDirectoriesTest, KeepsOnlyCanonicalNumericDirectories) {
  TempDir dir;
  for (const char* name : {"10", "2", "1", "0", "007", "v1", "-1", "1.5", "99999999999999999999",
                           "warmup", "initial_state", "configs"}) {
    dir.MakeDir(name);
  }
  dir.WriteFile("3", "a file, not a version");
  dir.WriteFile("config.pbtxt", "");
  std::filesystem::create_directory_symlink(dir.path() / "10", dir.path() / "4");

  std::vector<std::string> warnings;
  auto versions =
      ListVersionDirectories(dir.path(), [&](const std::string& w) { warnings.push_back(w); });

  EXPECT_THAT(versions, ElementsAre(0, 1, 2, 4, 10));
  ASSERT_EQ(warnings.size(), 5u);
  std::string all;
  for (const auto& w : warnings) all += w + "\n";
  for (const char* name : {"'007'", "'v1'", "'-1'", "'1.5'", "'99999999999999999999'"}) {
    EXPECT_THAT(all, HasSubstr(name));
  }
  EXPECT_THAT(all, ::testing::Not(HasSubstr("warmup")));
}

TEST(ListVersionDirectoriesTest, MissingDirectoryWarnsAndIsEmpty) {
  TempDir dir;
  std::vector<std::string> warnings;
  auto versions = ListVersionDirectories(dir.path() / "missing",
                                         [&](const std::string& w) { warnings.push_back(w); });
  EXPECT_THAT(versions, IsEmpty());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("failed to list model directory"));
}

TEST(ListVersionDirectoriesTest, NullCallbackIsAllowed) {
  TempDir dir;
  dir.MakeDir("x");
  dir.MakeDir("5");
  EXPECT_THAT(ListVersionDirectories(dir.path(), nullptr), ElementsAre(5));
}

inference::ModelVersionPolicy Latest(uint32_t n) {
  inference::ModelVersionPolicy p;
  p.mutable_latest()->set_num_versions(n);
  return p;
}

inference::ModelVersionPolicy Specific(std::vector<int64_t> versions) {
  inference::ModelVersionPolicy p;
  for (int64_t v : versions) p.mutable_specific()->add_versions(v);
  return p;
}

TEST(SelectVersionsTest, LatestTakesTheHighest) {
  auto selected = SelectVersions(Latest(2), {3, 1, 10, 2}, "m");
  ASSERT_TRUE(selected.ok());
  EXPECT_THAT(*selected, ElementsAre(3, 10));
}

TEST(SelectVersionsTest, LatestMoreThanAvailableTakesAll) {
  auto selected = SelectVersions(Latest(5), {1, 2}, "m");
  ASSERT_TRUE(selected.ok());
  EXPECT_THAT(*selected, ElementsAre(1, 2));
}

TEST(SelectVersionsTest, UnsetPolicyMeansLatestOne) {
  auto selected = SelectVersions(inference::ModelVersionPolicy(), {1, 7, 3}, "m");
  ASSERT_TRUE(selected.ok());
  EXPECT_THAT(*selected, ElementsAre(7));
}

TEST(SelectVersionsTest, AllTakesEveryVersion) {
  inference::ModelVersionPolicy all;
  all.mutable_all();
  auto selected = SelectVersions(all, {2, 1, 2}, "m");
  ASSERT_TRUE(selected.ok());
  EXPECT_THAT(*selected, ElementsAre(1, 2));
}

TEST(SelectVersionsTest, SpecificSkipsAndReportsMissing) {
  std::vector<int64_t> missing;
  auto selected = SelectVersions(Specific({5, 1, 3, 5}), {1, 2, 3}, "m", &missing);
  ASSERT_TRUE(selected.ok());
  EXPECT_THAT(*selected, ElementsAre(1, 3));
  EXPECT_THAT(missing, ElementsAre(5));
}

TEST(SelectVersionsTest, NothingQualifiesIsAnError) {
  std::vector<int64_t> missing;
  auto selected = SelectVersions(Specific({4}), {1, 2}, "m", &missing);
  ASSERT_FALSE(selected.ok());
  EXPECT_EQ(selected.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(selected.status().message(),
            "at least one version must be available under the version policy of model 'm'");
  EXPECT_THAT(missing, ElementsAre(4));
}

TEST(SelectVersionsTest, NoVersionsIsAnError) {
  EXPECT_FALSE(SelectVersions(Latest(1), {}, "m").ok());
}

TEST(SelectVersionsTest, LatestZeroIsAnError) {
  EXPECT_FALSE(SelectVersions(Latest(0), {1}, "m").ok());
}

}  // namespace
}  // namespace nereid::config
