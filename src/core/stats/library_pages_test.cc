#include "core/stats/library_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace nereid {
namespace {

// Relocated at start-up (pointers in a position-independent binary: .data.rel.ro, under RELRO)
// and written at run time (.data): pages that exist only in this process. Dropping them would
// bring back the file's unrelocated bytes.
const char* const kWords[] = {"alpha", "beta", "gamma"};
int Twice(int x) { return 2 * x; }
int Thrice(int x) { return 3 * x; }
int (*const kFunctions[])(int) = {&Twice, &Thrice};
int g_written = 1;

// Resident KiB of the file-backed mappings that are not writable (code and read-only data).
long ReadOnlyFileResidentKib() {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool counted = false;
  long total = 0;
  while (std::getline(smaps, line)) {
    std::istringstream fields(line);
    std::string first;
    fields >> first;
    if (first.find('-') != std::string::npos && first.back() != ':') {
      std::string perms, offset, dev, inode, path;
      fields >> perms >> offset >> dev >> inode >> path;
      counted = !path.empty() && path.front() == '/' && perms.find('w') == std::string::npos;
    } else if (counted && first == "Rss:") {
      long kib = 0;
      fields >> kib;
      total += kib;
    }
  }
  return total;
}

TEST(LibraryPagesTest, RelocatedAndWrittenDataSurviveAndCodeStillRuns) {
  g_written = 42;
  const ReleasedLibraryPages released = ReleaseReadOnlyLibraryPages();
  EXPECT_GT(released.ranges, 0);
  EXPECT_GT(released.bytes, 0u);
  EXPECT_STREQ(kWords[0], "alpha");
  EXPECT_STREQ(kWords[2], "gamma");
  EXPECT_EQ(kFunctions[0](5), 10);
  EXPECT_EQ(kFunctions[1](5), 15);
  EXPECT_EQ(g_written, 42);
  std::string s = "after";  // libstdc++ and libc run again from their refaulted pages
  s += std::to_string(ReleaseReadOnlyLibraryPages().ranges > 0);
  EXPECT_EQ(s, "after1");
}

TEST(LibraryPagesTest, ResidentCodePagesLeaveTheResidentSet) {
  const long before = ReadOnlyFileResidentKib();
  ASSERT_GT(before, 0);
  ReleaseReadOnlyLibraryPages();
  const long after = ReadOnlyFileResidentKib();
  // What is left is what reading smaps ran again since (a few fault-around windows).
  EXPECT_LT(after, before) << "before " << before << " KiB, after " << after << " KiB";
}

// Two pages of read-only data in this test binary's file mapping.
alignas(4096) const unsigned char kPatchable[2 * 4096] = {1, 2, 3};

const volatile unsigned char* Patchable() {
  return static_cast<const volatile unsigned char*>(static_cast<const void*>(kPatchable));
}

TEST(LibraryPagesTest, PrivateCopiesInAReadOnlyMappingSurvive) {
  // What a debugger's breakpoint, a uprobe or a text relocation does: a page of a read-only file
  // mapping made writable, written (the kernel gives this process a private copy) and made
  // read-only again. Dropping it would bring back the file's byte.
  auto* page = const_cast<unsigned char*>(kPatchable);
  ASSERT_EQ(mprotect(page, 4096, PROT_READ | PROT_WRITE), 0);
  *static_cast<volatile unsigned char*>(page) = 0xAB;
  ASSERT_EQ(mprotect(page, 4096, PROT_READ), 0);
  ReleaseReadOnlyLibraryPages();
  EXPECT_EQ(Patchable()[0], 0xAB);
  EXPECT_EQ(Patchable()[1], 2);
}

TEST(LibraryPagesTest, MappingsWithPrivateCopiesAreReadFromSmaps) {
  const std::string smaps =
      "00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/x\n"
      "Size:                328 kB\n"
      "Anonymous:             0 kB\n"
      "7f0000001000-7f0000003000 r--p 00001000 08:02 173522 /usr/lib/libz.so\n"
      "Rss:                   8 kB\n"
      "Anonymous:             4 kB\n"
      "VmFlags: rd mr mw me\n"
      "00100000-00200000 rw-p 00000000 00:00 0\n"
      "Anonymous:          1024 kB\n";
  const std::vector<PrivateCopyRange> got = MappingsWithPrivateCopies(smaps);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].lo, 0x100000u);  // sorted by start
  EXPECT_EQ(got[0].hi, 0x200000u);
  EXPECT_EQ(got[1].lo, 0x7f0000001000u);
  EXPECT_EQ(got[1].hi, 0x7f0000003000u);
}

TEST(LibraryPagesTest, MalformedSmapsTextYieldsWhatWasReadBeforeIt) {
  EXPECT_TRUE(MappingsWithPrivateCopies("").empty());
  EXPECT_TRUE(MappingsWithPrivateCopies("Anonymous: 4 kB\n").empty());  // no mapping line yet
  EXPECT_TRUE(MappingsWithPrivateCopies("zz-yy r--p\nAnonymous: 4 kB").empty());
  EXPECT_TRUE(MappingsWithPrivateCopies("2000-1000 r--p 0 0:0 0\nAnonymous: 4 kB").empty());
  EXPECT_TRUE(MappingsWithPrivateCopies("1000-2000 r--p 0 0:0 0\nAnonymous:").empty());
  EXPECT_TRUE(MappingsWithPrivateCopies("1000-2000 r--p 0 0:0 0\nAnonymous: x kB").empty());
  const auto got = MappingsWithPrivateCopies("1000-2000 r--p 0 0:0 0\nAnonymous: 4 kB\n3000-");
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].lo, 0x1000u);
}

}  // namespace
}  // namespace nereid
