// Helpers shared by the decoupled test backends (repeat, square): finding an input by name, a
// shape's text, a sleep that a cancelled request cuts short, and the threads that send a
// request's responses after Execute returned.
#pragma once

#include <chrono>
#include <functional>
#include <span>
#include <string_view>
#include <thread>
#include <vector>

#include "common/thread_annotations.h"
#include "nereid/backend_api.h"
#include "nereid/status.h"

namespace nereid::backends {

// The input called `name`, or nullptr.
const backend::TensorRef* FindTensor(std::span<const backend::TensorRef> inputs,
                                     std::string_view name);

// Sleeps `duration` in small steps; returns false (early) once `sender` is cancelled.
bool SleepUnlessCancelled(const backend::ResponseSender& sender, std::chrono::nanoseconds duration);

// The sending threads of one model instance: Start runs `fn` on a new thread; the destructor joins
// every thread started, so none outlives the plugin. Thread-safe.
class ResponseThreads {
 public:
  ResponseThreads() = default;
  ResponseThreads(const ResponseThreads&) = delete;
  ResponseThreads& operator=(const ResponseThreads&) = delete;
  ~ResponseThreads();

  // Internal (with `backend` in the text) when no thread can be started.
  Status Start(std::string_view backend, std::function<void()> fn);

 private:
  Mutex mu_;
  std::vector<std::thread> threads_ GUARDED_BY(mu_);
};

}  // namespace nereid::backends
