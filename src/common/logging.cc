#include "common/logging.h"

#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

namespace nereid::logging {
namespace {

std::atomic<int> g_verbose{0};
std::atomic<Format> g_format{Format::kDefault};
std::atomic<bool> g_info{true};
std::atomic<bool> g_warning{true};
std::atomic<bool> g_error{true};
// Written once by Init before other threads start; read-only afterwards.
std::string* g_file = new std::string();

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
  *g_file = options.file;
  SettingsUpdate update;
  update.info = options.info;
  update.warning = options.warning;
  update.error = options.error;
  update.verbose_level =
      static_cast<uint32_t>(std::clamp<int64_t>(options.verbose_level, 0, kMaxVerboseLevel));
  update.format = options.format;
  Apply(update);
  return Status::Ok();
}

int VerboseLevel() { return g_verbose.load(std::memory_order_relaxed); }

bool Enabled(spdlog::level::level_enum level) {
  switch (level) {
    case spdlog::level::info:
      return g_info.load(std::memory_order_relaxed);
    case spdlog::level::warn:
      return g_warning.load(std::memory_order_relaxed);
    case spdlog::level::err:
    case spdlog::level::critical:
      return g_error.load(std::memory_order_relaxed);
    default:
      return true;
  }
}

Settings CurrentSettings() {
  Settings s;
  s.file = *g_file;
  s.info = g_info.load();
  s.warning = g_warning.load();
  s.error = g_error.load();
  s.verbose_level = static_cast<uint32_t>(g_verbose.load());
  s.format = g_format.load();
  return s;
}

void Apply(const SettingsUpdate& update) {
  if (update.info) g_info = *update.info;
  if (update.warning) g_warning = *update.warning;
  if (update.error) g_error = *update.error;
  if (update.verbose_level) {
    g_verbose = static_cast<int>(std::min(*update.verbose_level, kMaxVerboseLevel));
  }
  if (update.format) g_format = *update.format;
}

const char* FormatName(Format format) { return format == Format::kIso8601 ? "ISO8601" : "default"; }

std::optional<Format> ParseFormat(std::string_view name) {
  if (name == "default") return Format::kDefault;
  if (name == "ISO8601") return Format::kIso8601;
  return std::nullopt;
}

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
