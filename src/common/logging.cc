#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace nereid::logging {
namespace {

std::atomic<int> g_verbose{0};
std::atomic<Format> g_format{Format::kDefault};

char LevelLetter(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::err:
    case spdlog::level::critical:
      return 'E';
    case spdlog::level::warn:
      return 'W';
    case spdlog::level::debug:
    case spdlog::level::trace:
      return 'V';
    default:
      return 'I';
  }
}

std::string_view BaseName(const char* path) {
  std::string_view p(path);
  const size_t slash = p.rfind('/');
  return slash == std::string_view::npos ? p : p.substr(slash + 1);
}

}  // namespace

Status Init(const Options& options) {
  std::shared_ptr<spdlog::logger> logger;
  try {
    if (options.file.empty()) {
      logger = spdlog::stderr_logger_mt("nereid");
    } else {
      logger = spdlog::basic_logger_mt("nereid", options.file);
    }
  } catch (const spdlog::spdlog_ex& e) {
    return InvalidArgument("cannot open log file '" + options.file + "': " + e.what());
  }
  logger->set_pattern("%v");
  // Levels are filtered individually below, so let everything through spdlog itself.
  logger->set_level(spdlog::level::trace);
  logger->flush_on(spdlog::level::trace);
  spdlog::set_default_logger(logger);
  g_verbose = options.verbose_level;
  g_format = options.format;
  if (!options.info) spdlog::default_logger_raw()->set_level(spdlog::level::warn);
  if (!options.info && !options.warning) {
    spdlog::default_logger_raw()->set_level(spdlog::level::err);
  }
  if (!options.info && !options.warning && !options.error) {
    spdlog::default_logger_raw()->set_level(spdlog::level::off);
  }
  return Status::Ok();
}

int VerboseLevel() { return g_verbose.load(std::memory_order_relaxed); }

std::string Escape(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    switch (c) {
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\\':
        out += "\\\\";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof(buf), "\\u%04x", c);
          out += buf;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

void Write(spdlog::level::level_enum level, const char* file, int line, std::string_view message) {
  const auto now = std::chrono::system_clock::now();
  const auto secs = std::chrono::system_clock::to_time_t(now);
  const auto micros =
      std::chrono::duration_cast<std::chrono::microseconds>(now.time_since_epoch()).count() %
      1000000;
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[64];
  if (g_format.load(std::memory_order_relaxed) == Format::kIso8601) {
    std::snprintf(stamp, sizeof(stamp), "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
    spdlog::default_logger_raw()->log(level, "{} {} {} {}:{}] {}", stamp, LevelLetter(level),
                                      static_cast<long>(syscall(SYS_gettid)), BaseName(file), line,
                                      Escape(message));
    return;
  }
  std::snprintf(stamp, sizeof(stamp), "%c%02d%02d %02d:%02d:%02d.%06ld", LevelLetter(level),
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<long>(micros));
  spdlog::default_logger_raw()->log(level, "{} {} {}:{}] {}", stamp,
                                    static_cast<long>(syscall(SYS_gettid)), BaseName(file), line,
                                    Escape(message));
}

}  // namespace nereid::logging
