#include "common/thread_name.h"

#include <pthread.h>

namespace nereid {

namespace {
constexpr size_t kMaxThreadName = 15;  // TASK_COMM_LEN - 1

void Name(pthread_t thread, std::string_view name) {
  const std::string cut(name.substr(0, kMaxThreadName));
  pthread_setname_np(thread, cut.c_str());
}
}  // namespace

void NameThisThread(std::string_view name) { Name(pthread_self(), name); }

void NameThread(std::thread& thread, std::string_view name) { Name(thread.native_handle(), name); }

std::string ThisThreadName() {
  char buf[kMaxThreadName + 1] = {};
  if (pthread_getname_np(pthread_self(), buf, sizeof(buf)) != 0) return {};
  return buf;
}

}  // namespace nereid
