// A fingerprint of a model directory for POLL mode: every regular file's relative path, size,
// modification time and a 64-bit content hash, folded per top-level version directory and for
// the rest of the model (config.pbtxt, label files, warmup data, ...). Two scans that produce
// equal fingerprints saw identical files. Thread-safe pure function of the file system.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace nereid {

struct DirFingerprint {
  bool exists = false;                       // the directory was there
  uint64_t model_files = 0;                  // everything outside the numeric top-level directories
  std::map<std::string, uint64_t> versions;  // numeric top-level directory -> its files

  bool operator==(const DirFingerprint& other) const = default;
};

// Reads and hashes every file under `dir` (symlinks followed, at most kMaxFiles files; more make
// the fingerprint unstable on purpose so such a directory is never loaded). Errors while reading
// (a file vanishing mid-scan) are folded in, so a directory changing under the scan never yields
// the fingerprint of a quiet one.
DirFingerprint FingerprintModelDir(const std::filesystem::path& dir);

inline constexpr size_t kMaxFingerprintFiles = 100000;

// 64-bit hash of a byte range, continuing from `seed` (exposed for tests).
uint64_t HashBytes(const char* data, size_t size, uint64_t seed);

}  // namespace nereid
