#include "core/repository/dir_fingerprint.h"

#include <gtest/gtest.h>

#include "core/config/test_temp_dir.h"

namespace nereid {
namespace {

using config::testing::TempDir;

TEST(DirFingerprintTest, MissingDirectory) {
  EXPECT_FALSE(FingerprintModelDir("/nonexistent/nereid/model").exists);
}

TEST(DirFingerprintTest, EqualWhenNothingChanged) {
  TempDir t;
  t.WriteFile("config.pbtxt", "name: \"m\"");
  t.WriteFile("1/model.onnx", "weights");
  const DirFingerprint a = FingerprintModelDir(t.path());
  EXPECT_TRUE(a.exists);
  EXPECT_EQ(a, FingerprintModelDir(t.path()));
  EXPECT_EQ(a.versions.size(), 1u);
}

TEST(DirFingerprintTest, ContentChangeWithSameSizeAndMtimeIsSeen) {
  TempDir t;
  const auto file = t.WriteFile("1/model.onnx", "aaaa");
  const auto mtime = std::filesystem::last_write_time(file);
  const DirFingerprint before = FingerprintModelDir(t.path());
  t.WriteFile("1/model.onnx", "bbbb");
  std::filesystem::last_write_time(file, mtime);
  const DirFingerprint after = FingerprintModelDir(t.path());
  EXPECT_NE(before, after);
  EXPECT_EQ(before.model_files, after.model_files);  // only the version changed
}

// "01" is not a version directory (the version policy ignores it), so a change under it is a
// change of the model's own files: it cannot make version 1 look unchanged, or changed.
TEST(DirFingerprintTest, NonCanonicalNumbersAreModelFiles) {
  TempDir t;
  t.WriteFile("1/model.onnx", "one");
  t.WriteFile("01/model.onnx", "zero-one");
  const DirFingerprint before = FingerprintModelDir(t.path());
  ASSERT_EQ(before.versions.size(), 1u);
  EXPECT_EQ(before.versions.count("1"), 1u);
  t.WriteFile("01/model.onnx", "changed!");
  const DirFingerprint after = FingerprintModelDir(t.path());
  EXPECT_NE(before.model_files, after.model_files);
  EXPECT_EQ(before.versions, after.versions);
}

TEST(DirFingerprintTest, SeparatesVersionsFromModelFiles) {
  TempDir t;
  t.WriteFile("config.pbtxt", "a");
  t.WriteFile("1/model.onnx", "x");
  const DirFingerprint a = FingerprintModelDir(t.path());
  t.WriteFile("2/model.onnx", "y");
  const DirFingerprint b = FingerprintModelDir(t.path());
  EXPECT_EQ(a.model_files, b.model_files);
  EXPECT_EQ(a.versions.at("1"), b.versions.at("1"));
  EXPECT_EQ(b.versions.count("2"), 1u);
  t.WriteFile("labels.txt", "cat");
  EXPECT_NE(FingerprintModelDir(t.path()).model_files, b.model_files);
}

TEST(DirFingerprintTest, HashBytesDependsOnEveryByte) {
  const std::string a(1000, 'a');
  std::string b = a;
  b[999] = 'b';
  EXPECT_NE(HashBytes(a.data(), a.size(), 1), HashBytes(b.data(), b.size(), 1));
  EXPECT_NE(HashBytes(a.data(), 10, 1), HashBytes(a.data(), 11, 1));
}

}  // namespace
}  // namespace nereid
