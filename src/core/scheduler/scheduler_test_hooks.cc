#include "core/scheduler/scheduler_test_hooks.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>

#include "common/logging.h"

namespace nereid {
namespace {

size_t ReadVariable(const char* name) {
  std::string warning;
  const size_t n = ParseDelayCount(std::getenv(name), &warning);
  if (!warning.empty()) LOG_WARNING("{}={}: {}", name, std::getenv(name), warning);
  return n;
}

}  // namespace

size_t ParseDelayCount(const char* text, std::string* warning) {
  if (text == nullptr) return 0;
  const char* p = text;
  while (*p == ' ' || (*p >= '\t' && *p <= '\r')) ++p;
  bool negative = false;
  if (*p == '+' || *p == '-') negative = *p++ == '-';
  // atoi's result is an int; beyond its range the behaviour is undefined, so saturate.
  long long value = 0;
  const char* digits = p;
  for (; std::isdigit(static_cast<unsigned char>(*p)) != 0; ++p) {
    value = std::min<long long>(value * 10 + (*p - '0'), std::numeric_limits<int>::max());
  }
  const bool plain = p != digits && *p == '\0' && digits == text;
  if (warning != nullptr && !plain) {
    *warning = negative && value != 0
                   ? "a negative count holds the scheduler forever (as Triton, which reads it "
                     "into a size_t)"
                   : "not a plain non-negative number; read as " + std::to_string(value) +
                         " (C's atoi, as Triton)";
  }
  const int n = static_cast<int>(negative ? -value : value);
  return static_cast<size_t>(n);  // a negative int wraps, exactly as Triton's size_t does
}

SchedulerTestHooks SchedulerTestHooks::FromEnvironment() {
  SchedulerTestHooks hooks;
  hooks.delay_count = ReadVariable("TRITONSERVER_DELAY_SCHEDULER");
  hooks.backlog_delay_count = ReadVariable("TRITONSERVER_BACKLOG_DELAY_SCHEDULER");
  return hooks;
}

}  // namespace nereid
