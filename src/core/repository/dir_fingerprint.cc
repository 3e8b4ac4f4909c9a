#include "core/repository/dir_fingerprint.h"

#include <chrono>
#include <cstring>
#include <fstream>
#include <vector>

#include "core/config/version_policy.h"

namespace nereid {
namespace {

constexpr uint64_t kSeed = 0x9e3779b97f4a7c15ull;

uint64_t Mix(uint64_t h, uint64_t v) {
  h ^= v + kSeed + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

uint64_t HashString(const std::string& s, uint64_t h) { return HashBytes(s.data(), s.size(), h); }

// The same rule as the version policy's: "01" is not version 1, so its files count as the
// model's own.
bool IsVersionName(const std::string& name) { return config::ParseVersion(name).has_value(); }

uint64_t HashFile(const std::filesystem::path& path, uint64_t h) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Mix(h, 0xbad);
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    const auto n = in.gcount();
    if (n <= 0) break;
    h = HashBytes(buffer.data(), static_cast<size_t>(n), h);
  }
  if (in.bad()) h = Mix(h, 0xbad);
  return h;
}

}  // namespace

uint64_t HashBytes(const char* data, size_t size, uint64_t seed) {
  uint64_t h = Mix(seed, size);
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    h = (h ^ w) * 0x100000001b3ull;
    h ^= h >> 29;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, data + i, size - i);
  return Mix(h, tail);
}

DirFingerprint FingerprintModelDir(const std::filesystem::path& dir) {
  DirFingerprint fp;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return fp;
  fp.exists = true;
  size_t files = 0;
  std::filesystem::recursive_directory_iterator it(
      dir, std::filesystem::directory_options::follow_directory_symlink, ec);
  if (ec) fp.model_files = Mix(fp.model_files, 0xbad);
  for (std::filesystem::recursive_directory_iterator end; !ec && it != end; it.increment(ec)) {
    if (it.depth() > 32) {
      it.disable_recursion_pending();
      continue;
    }
    const std::filesystem::path rel = it->path().lexically_relative(dir);
    const std::string top = rel.begin()->string();
    const bool versioned = IsVersionName(top);
    uint64_t& h = versioned ? fp.versions[top] : fp.model_files;
    std::error_code fec;
    if (it->is_directory(fec)) {
      h = HashString(rel.string() + "/", h);
      continue;
    }
    if (!it->is_regular_file(fec)) continue;
    if (++files > kMaxFingerprintFiles) {
      // Too many files: make every scan differ so the directory never counts as stable.
      fp.model_files =
          Mix(fp.model_files,
              static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
      return fp;
    }
    const auto size = it->file_size(fec);
    const auto mtime = it->last_write_time(fec).time_since_epoch().count();
    h = HashString(rel.string(), h);
    h = Mix(h, static_cast<uint64_t>(size));
    h = Mix(h, static_cast<uint64_t>(mtime));
    h = HashFile(it->path(), h);
  }
  if (ec) fp.model_files = Mix(fp.model_files, 0xbad);
  return fp;
}

}  // namespace nereid
