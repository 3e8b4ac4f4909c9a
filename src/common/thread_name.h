// Names threads for ps/top/gdb and /proc/<pid>/task/*/comm (bench/footprint.py and the footprint
// tests list threads by name). Linux keeps at most 15 bytes; a longer name is cut to that.
#pragma once

#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace nereid {

void NameThisThread(std::string_view name);

// Names `thread` from the calling (creating) thread.
void NameThread(std::thread& thread, std::string_view name);

// Starts a thread running `fn`, named `name` before this returns: whatever the creator does next
// (a "Started ..." log line, a readiness answer) already sees the name, never the creator's.
template <typename Fn>
std::thread StartNamedThread(std::string_view name, Fn&& fn) {
  std::thread thread(std::forward<Fn>(fn));
  NameThread(thread, name);
  return thread;
}

// The calling thread's name as the kernel holds it (empty if it cannot be read).
std::string ThisThreadName();

}  // namespace nereid
