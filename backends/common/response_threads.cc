#include "common/response_threads.h"

#include <pthread.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>

namespace nereid::backends {

const backend::TensorRef* FindTensor(std::span<const backend::TensorRef> inputs,
                                     std::string_view name) {
  for (const auto& t : inputs) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

bool SleepUnlessCancelled(const backend::ResponseSender& sender,
                          std::chrono::nanoseconds duration) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + duration;
  while (!sender.IsCancelled()) {
    const auto now = Clock::now();
    if (now >= until) return true;
    std::this_thread::sleep_for(
        std::min<Clock::duration>(std::chrono::milliseconds(5), until - now));
  }
  return false;
}

ResponseThreads::~ResponseThreads() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(mu_);
    threads.swap(threads_);
  }
  for (auto& t : threads) t.join();
}

Status ResponseThreads::Start(std::string_view backend, std::function<void()> fn) {
  try {
    MutexLock lock(mu_);
    threads_.emplace_back([fn = std::move(fn), name = std::string(backend).substr(0, 11)] {
      pthread_setname_np(pthread_self(), (name + "-rsp").c_str());  // e.g. "repeat-rsp"
      fn();
    });
  } catch (const std::exception& e) {
    return Internal(std::string(backend) + ": " + e.what());
  }
  return Status::Ok();
}

}  // namespace nereid::backends
