// Run-time changes of the log settings reach what is written. Own binary: Init installs the
// process-wide logger once.
#include "common/logging.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace nereid::logging {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(Logging, SettingsChangeWhatIsWrittenAtRunTime) {
  const std::string path = ::testing::TempDir() + "/logging_test." + std::to_string(getpid());
  Options options;
  options.file = path;
  ASSERT_TRUE(Init(options).ok());
  EXPECT_EQ(CurrentSettings().file, path);

  LOG_INFO("info one");
  LOG_VERBOSE(1, "verbose hidden");
  SettingsUpdate update;
  update.info = false;
  update.verbose_level = 1;
  Apply(update);
  LOG_INFO("info hidden");
  LOG_VERBOSE(1, "verbose shown");
  LOG_WARNING("warning shown");
  update = SettingsUpdate();
  update.warning = false;
  update.error = false;
  update.format = Format::kIso8601;
  Apply(update);
  LOG_WARNING("warning hidden");
  LOG_ERROR("error hidden");
  update = SettingsUpdate();
  update.error = true;
  Apply(update);
  LOG_ERROR("error iso");

  const std::string log = ReadAll(path);
  EXPECT_NE(log.find("info one"), std::string::npos);
  EXPECT_EQ(log.find("hidden"), std::string::npos) << log;
  EXPECT_NE(log.find("verbose shown"), std::string::npos);
  EXPECT_NE(log.find("warning shown"), std::string::npos);
  const size_t iso = log.find("error iso");
  ASSERT_NE(iso, std::string::npos);
  const std::string last_line = log.substr(log.rfind('\n', log.size() - 2) + 1);
  EXPECT_EQ(last_line.substr(10, 1), "T") << last_line;  // 2026-11-25T23:59:59Z E ...
  EXPECT_EQ(last_line.substr(21, 2), "E ") << last_line;

  const Settings now = CurrentSettings();
  EXPECT_FALSE(now.info);
  EXPECT_FALSE(now.warning);
  EXPECT_TRUE(now.error);
  EXPECT_EQ(now.verbose_level, 1u);
  EXPECT_EQ(now.format, Format::kIso8601);
  unlink(path.c_str());
}

TEST(Logging, FormatNames) {
  EXPECT_EQ(ParseFormat("default"), Format::kDefault);
  EXPECT_EQ(ParseFormat("ISO8601"), Format::kIso8601);
  EXPECT_EQ(ParseFormat("iso8601"), std::nullopt);
  EXPECT_STREQ(FormatName(Format::kIso8601), "ISO8601");
}

}  // namespace
}  // namespace nereid::logging
