// Names the calling thread for ps/top/gdb and /proc/<pid>/task/*/comm (bench/footprint.py lists
// threads by name). Linux keeps at most 15 bytes; a longer name is cut to that.
#pragma once

#include <string>
#include <string_view>

namespace nereid {

void NameThisThread(std::string_view name);

// The calling thread's name as the kernel holds it (empty if it cannot be read).
std::string ThisThreadName();

}  // namespace nereid
