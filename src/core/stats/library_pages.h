// Returning the pages of mapped code that start-up touched once (issue 21, resident memory).
//
// Loading a model maps and initialises libraries whose start-up code is never run again: ONNX
// Runtime registers every CPU kernel and operator schema of its build (~22 MiB of its code and
// read-only data resident after the first session, of which a served model later uses ~6), and
// the process's own start-up (dynamic relocation, static constructors, flag parsing, gRPC and
// protobuf initialisation) touches more. Those pages are clean and file-backed: the kernel can
// drop them from the process at any time and map them again from the page cache on the next
// access (a minor fault), which is what it does under memory pressure. ReleaseReadOnlyLibraryPages
// does that at a moment Nereid chooses (after the model loads it was asked for), so that the
// resident set holds what serving uses, not what start-up once ran.
//
// Thread-safety: safe from any thread; other threads keep running (a page they use is mapped
// again on their next access). Costs a walk of the loaded objects and one madvise per read-only
// segment (about 1 ms for ~200 segments, plus the minor faults of the pages used afterwards):
// for model loads, never for the request path.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace nereid {

struct ReleasedLibraryPages {
  int ranges = 0;      // read-only segments advised
  uint64_t bytes = 0;  // their size (address space, not resident bytes)
};

// Drops the resident pages of every loaded object's read-only PT_LOAD segments (code, read-only
// data) from this process's page tables with MADV_DONTNEED. Writable segments, which hold RELRO
// and every relocated or written page (private copies that exist nowhere else), are never
// advised, nor is any page shared with one, nor the vDSO. Nor is any mapping that holds private
// copies of file pages (smaps' "Anonymous" above 0: text relocations, a debugger's breakpoints, a
// uprobe's patched instruction, anything mprotect made writable and wrote): dropping those would
// silently bring back the file's bytes.
ReleasedLibraryPages ReleaseReadOnlyLibraryPages();

// [lo, hi) of a mapping that holds private copies of pages.
struct PrivateCopyRange {
  uintptr_t lo = 0;
  uintptr_t hi = 0;
};

// The mappings of a /proc/PID/smaps text whose "Anonymous:" is above 0 kB, sorted by start.
// Malformed or truncated text yields the mappings read before it (never throws).
std::vector<PrivateCopyRange> MappingsWithPrivateCopies(std::string_view smaps);

}  // namespace nereid
