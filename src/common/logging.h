// Logging in Triton's line format: `I1122 04:21:52.123456 1234 file.cc:42] message`.
// Thread-safe. Messages are escaped (control characters become \n, \t, \uXXXX) so request data
// cannot forge log lines (Triton's CVE-2024-0095 fix does the same).
#pragma once

#include <spdlog/spdlog.h>

#include "nereid/status.h"

#include <string>
#include <string_view>

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

// Returns `message` with control characters and backslashes escaped.
std::string Escape(std::string_view message);

void Write(spdlog::level::level_enum level, const char* file, int line, std::string_view message);

}  // namespace nereid::logging

#define NEREID_LOG_(level, ...)                                                        \
  do {                                                                                 \
    if (spdlog::default_logger_raw()->should_log(level)) {                             \
      ::nereid::logging::Write(level, __FILE__, __LINE__, fmt::format(__VA_ARGS__));   \
    }                                                                                  \
  } while (0)

#define LOG_INFO(...) NEREID_LOG_(spdlog::level::info, __VA_ARGS__)
#define LOG_WARNING(...) NEREID_LOG_(spdlog::level::warn, __VA_ARGS__)
#define LOG_ERROR(...) NEREID_LOG_(spdlog::level::err, __VA_ARGS__)
// Verbose lines print when --log-verbose >= n.
#define LOG_VERBOSE(n, ...)                                                       \
  do {                                                                            \
    if (::nereid::logging::VerboseLevel() >= (n)) {                               \
      ::nereid::logging::Write(spdlog::level::debug, __FILE__, __LINE__,          \
                               fmt::format(__VA_ARGS__));                         \
    }                                                                             \
  } while (0)
