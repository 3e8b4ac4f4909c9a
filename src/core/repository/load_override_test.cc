#include "core/repository/load_override.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace nereid {
namespace {

std::string Read(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(LoadOverrideTest, WritesFilesIntoAPrivateDirectoryRemovedWithTheLastOwner) {
  std::filesystem::path root;
  {
    auto dir = TempModelDir::Create({{"1/model.onnx", "abc"},
                                     {"config.pbtxt", "x"},
                                     {"1/sub/dir/w.bin", std::string("\0\1", 2)}});
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    root = (*dir)->path();
    EXPECT_EQ(Read(root / "1/model.onnx"), "abc");
    EXPECT_EQ(Read(root / "1/sub/dir/w.bin"), std::string("\0\1", 2));
    EXPECT_EQ(std::filesystem::status(root).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_all);
  }
  EXPECT_FALSE(std::filesystem::exists(root));
}

TEST(LoadOverrideTest, RejectsEveryEscapeBeforeWritingAnything) {
  for (const char* bad :
       {"../x", "1/../../x", "/etc/x", "..", "1/..", "", ".", "./", "1/\x01x", "a/../../b"}) {
    EXPECT_EQ(ValidateOverridePath(bad).code(), StatusCode::kInvalidArgument) << bad;
    auto dir = TempModelDir::Create({{"1/ok", "fine"}, {bad, "evil"}});
    EXPECT_FALSE(dir.ok()) << bad;
  }
  EXPECT_TRUE(ValidateOverridePath("1/model.onnx").ok());
  EXPECT_TRUE(ValidateOverridePath("./1/model.onnx").ok());
}

TEST(LoadOverrideTest, RejectsTheSameFileTwice) {
  auto dir = TempModelDir::Create({{"1/m", "a"}, {"1//m", "b"}});
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("more than once"), std::string::npos);
}

}  // namespace
}  // namespace nereid
