// Logging in Triton's line format: `I1122 04:21:52.123456 1234 file.cc:42] message`.
// Thread-safe. Messages are escaped (control characters become \n, \t, \uXXXX) so request data
// cannot forge log lines (Triton's CVE-2024-0095 fix does the same).
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "nereid/status.h"

namespace nereid::logging {

enum class Format { kDefault, kIso8601 };

struct Options {
  bool info = true;
  bool warning = true;
  bool error = true;
  int verbose_level = 0;
  Format format = Format::kDefault;
  std::string file;  // empty: stderr
};

// Installs the process-wide logger. Call once at start-up, before other threads log. Fails when
// the log file cannot be opened.
Status Init(const Options& options);

int VerboseLevel();

// Whether lines of `level` (info, warn, err) are written now.
bool Enabled(spdlog::level::level_enum level);

// The settings of Triton's logging extension (REFERENCE-2.md §12.1), read and changed at run time.
// The file is fixed at Init: it is never changeable over the network (CVE-2024-0087).
struct Settings {
  std::string file;
  bool info = true;
  bool warning = true;
  bool error = true;
  uint32_t verbose_level = 0;
  Format format = Format::kDefault;
};

// A change to some of the settings; unset fields keep their value.
struct SettingsUpdate {
  std::optional<bool> info;
  std::optional<bool> warning;
  std::optional<bool> error;
  std::optional<uint32_t> verbose_level;
  std::optional<Format> format;
};

// Levels above this are stored as this (Triton keeps the level in an int32).
inline constexpr uint32_t kMaxVerboseLevel = 2147483647u;

Settings CurrentSettings();
// Applies every field of `update` (an already validated update: it cannot fail, so a request
// changes all its keys or none).
void Apply(const SettingsUpdate& update);

// "default" / "ISO8601", Triton's names.
const char* FormatName(Format format);
std::optional<Format> ParseFormat(std::string_view name);

// Returns `message` with control characters and backslashes escaped.
std::string Escape(std::string_view message);

void Write(spdlog::level::level_enum level, const char* file, int line, std::string_view message);

}  // namespace nereid::logging

#define NEREID_LOG_(level, ...)                                                      \
  do {                                                                               \
    if (::nereid::logging::Enabled(level)) {                                         \
      ::nereid::logging::Write(level, __FILE__, __LINE__, fmt::format(__VA_ARGS__)); \
    }                                                                                \
  } while (0)

#define LOG_INFO(...) NEREID_LOG_(spdlog::level::info, __VA_ARGS__)
#define LOG_WARNING(...) NEREID_LOG_(spdlog::level::warn, __VA_ARGS__)
#define LOG_ERROR(...) NEREID_LOG_(spdlog::level::err, __VA_ARGS__)
// Verbose lines print when --log-verbose >= n.
#define LOG_VERBOSE(n, ...)                                              \
  do {                                                                   \
    if (::nereid::logging::VerboseLevel() >= (n)) {                      \
      ::nereid::logging::Write(spdlog::level::debug, __FILE__, __LINE__, \
                               fmt::format(__VA_ARGS__));                \
    }                                                                    \
  } while (0)
