#include "core/trace/trace_settings.h"

#include <gtest/gtest.h>

namespace nereid::trace {
namespace {

TEST(TraceSettingsTest, Levels) {
  EXPECT_EQ(LevelNames(kLevelOff), std::vector<std::string>{"OFF"});
  EXPECT_EQ(LevelNames(kLevelTimestamps | kLevelTensors),
            (std::vector<std::string>{"TIMESTAMPS", "TENSORS"}));
  EXPECT_EQ(*ParseLevels({"TIMESTAMPS", "TENSORS"}), kLevelTimestamps | kLevelTensors);
  EXPECT_EQ(*ParseLevels({"OFF"}), kLevelOff);
  EXPECT_FALSE(ParseLevels({"LOUD"})->has_value());  // unknown names are ignored
  EXPECT_FALSE(ParseLevels({})->has_value());
  EXPECT_EQ(ParseLevels({"OFF", "TIMESTAMPS"}).status().message(),
            "Expect only one trace level 'OFF' is specified");
}

TEST(TraceSettingsTest, UnsignedValues) {
  EXPECT_EQ(*ParseUnsigned("trace_rate", "12"), 12u);
  EXPECT_EQ(*ParseUnsigned("trace_rate", " 7abc"), 7u);  // std::stoi's reading
  EXPECT_EQ(ParseUnsigned("trace_rate", "often").status().message(),
            "Unable to parse 'trace_rate', got: often");
  EXPECT_EQ(ParseUnsigned("trace_rate", "").status().message(),
            "Unable to parse 'trace_rate', got: ");
  EXPECT_EQ(ParseUnsigned("log_frequency", "99999999999").status().message(),
            "Unable to parse 'log_frequency', value is out of range [ 0, 4294967295 ], got: "
            "99999999999");
  EXPECT_EQ(ParseUnsigned("trace_rate", "-3").status().message(),
            "Unable to parse 'trace_rate', value is out of range [ 0, 4294967295 ], got: -3");
  EXPECT_EQ(ParseUnsigned("trace_rate", "-3").status().code(), StatusCode::kInvalidArgument);
}

TEST(TraceSettingsTest, Count) {
  EXPECT_EQ(*ParseCount("-1", false), -1);
  EXPECT_EQ(*ParseCount("5", true), 5);
  EXPECT_EQ(ParseCount("-2", false).status().message(),
            "Unable to parse 'trace_count'. Expecting value >= -1, got:-2");
  EXPECT_EQ(ParseCount("-2", true).status().message(),
            "Unable to parse 'trace_count'. Expecting value >= -1, got: -2");
  EXPECT_EQ(ParseCount("x", false).status().message(), "Unable to parse 'trace_count', got: x");
  EXPECT_EQ(ParseCount("2147483648", false).status().message(),
            "Unable to parse 'trace_count', value is out of range [ -1, 2147483647 ], got: "
            "2147483648");
}

TEST(TraceSettingsTest, InvalidReason) {
  TraceConfig c;
  EXPECT_EQ(InvalidReason(c), "tracing is disabled");
  c.level = kLevelTimestamps;
  EXPECT_EQ(InvalidReason(c), "trace file name is not given");
  c.file = "/tmp/x";
  EXPECT_EQ(InvalidReason(c), "");
  c.rate = 0;
  EXPECT_EQ(InvalidReason(c), "sample rate must be non-zero");
}

}  // namespace
}  // namespace nereid::trace
