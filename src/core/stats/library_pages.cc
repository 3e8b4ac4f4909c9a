#include "core/stats/library_pages.h"

#include <link.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace nereid {
namespace {

struct Range {
  uintptr_t lo = 0;
  uintptr_t hi = 0;  // exclusive
};

bool IsVdso(const dl_phdr_info& info) {
  if (info.dlpi_name != nullptr && std::strstr(info.dlpi_name, "linux-vdso") != nullptr) {
    return true;
  }
  const uintptr_t vdso = getauxval(AT_SYSINFO_EHDR);
  if (vdso == 0) return false;
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    const uintptr_t lo = info.dlpi_addr + ph.p_vaddr;
    if (vdso >= lo && vdso < lo + ph.p_memsz) return true;
  }
  return false;
}

// `r` minus `w` when that leaves one range (the writable parts of an object follow or precede its
// read-only ones, so a page-rounded writable range cuts one end off).
Range Clip(Range r, Range w) {
  if (w.hi <= r.lo || w.lo >= r.hi) return r;
  if (w.lo <= r.lo) {
    r.lo = std::min(r.hi, w.hi);
  } else {
    r.hi = w.lo;
  }
  return r;
}

struct Walk {
  std::vector<PrivateCopyRange> copied;  // sorted by start
  ReleasedLibraryPages released;
};

// MADV_DONTNEED on the parts of [lo, hi) that no mapping with private copies overlaps.
void AdviseAround(uintptr_t lo, uintptr_t hi, Walk& walk) {
  for (const PrivateCopyRange& c : walk.copied) {
    if (c.hi <= lo) continue;
    if (c.lo >= hi) break;
    if (c.lo > lo && madvise(reinterpret_cast<void*>(lo), c.lo - lo, MADV_DONTNEED) == 0) {
      walk.released.ranges += 1;
      walk.released.bytes += c.lo - lo;
    }
    lo = std::max(lo, c.hi);
    if (lo >= hi) return;
  }
  // Fails with EINVAL on locked pages (mlock): those stay, as the caller of mlock wanted.
  if (madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) == 0) {
    walk.released.ranges += 1;
    walk.released.bytes += hi - lo;
  }
}

int AdviseObject(dl_phdr_info* info, size_t, void* data) {
  auto& walk = *static_cast<Walk*>(data);
  if (IsVdso(*info)) return 0;
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto down = [page](uintptr_t a) { return a & ~(page - 1); };
  const auto up = [page](uintptr_t a) { return (a + page - 1) & ~(page - 1); };
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) != 0 || ph.p_filesz == 0) continue;
    const uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    // Inward to whole pages of this segment's file contents.
    Range r{up(start), down(start + ph.p_filesz)};
    for (int j = 0; j < info->dlpi_phnum && r.lo < r.hi; ++j) {
      const ElfW(Phdr)& other = info->dlpi_phdr[j];
      const bool writable = other.p_type == PT_LOAD && (other.p_flags & PF_W) != 0;
      if (!writable && other.p_type != PT_GNU_RELRO) continue;
      const uintptr_t w = info->dlpi_addr + other.p_vaddr;
      r = Clip(r, Range{down(w), up(w + other.p_memsz)});
    }
    if (r.lo < r.hi) AdviseAround(r.lo, r.hi, walk);
  }
  return 0;
}

std::vector<PrivateCopyRange> ReadPrivateCopies() {
  std::string text;
  if (FILE* f = std::fopen("/proc/self/smaps", "re")) {
    char buf[65536];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) text.append(buf, n);
    std::fclose(f);
  }
  return MappingsWithPrivateCopies(text);
}

}  // namespace

std::vector<PrivateCopyRange> MappingsWithPrivateCopies(std::string_view smaps) {
  std::vector<PrivateCopyRange> out;
  PrivateCopyRange current;
  bool have_mapping = false;
  while (!smaps.empty()) {
    const size_t eol = smaps.find('\n');
    std::string_view line = smaps.substr(0, eol);
    smaps.remove_prefix(eol == std::string_view::npos ? smaps.size() : eol + 1);
    unsigned long long lo = 0, hi = 0;
    int used = 0;
    // A mapping's header line: "lo-hi perms offset dev inode [path]" (hexadecimal addresses).
    const std::string copy(line.substr(0, 64));
    if (std::sscanf(copy.c_str(), "%llx-%llx %n", &lo, &hi, &used) == 2 && used > 0 && lo < hi) {
      current = PrivateCopyRange{static_cast<uintptr_t>(lo), static_cast<uintptr_t>(hi)};
      have_mapping = true;
      continue;
    }
    if (!have_mapping || line.rfind("Anonymous:", 0) != 0) continue;
    unsigned long long kib = 0;
    const std::string field(line.substr(10, 32));
    if (std::sscanf(field.c_str(), "%llu", &kib) == 1 && kib > 0) out.push_back(current);
    have_mapping = false;
  }
  std::sort(out.begin(), out.end(),
            [](const PrivateCopyRange& a, const PrivateCopyRange& b) { return a.lo < b.lo; });
  return out;
}

ReleasedLibraryPages ReleaseReadOnlyLibraryPages() {
  Walk walk;
  walk.copied = ReadPrivateCopies();
  // dl_iterate_phdr holds the loader's lock: no object is unmapped while it is advised.
  dl_iterate_phdr(&AdviseObject, &walk);
  return walk.released;
}

}  // namespace nereid
