#include "core/repository/load_override.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/logging.h"

namespace nereid {
namespace {

Status BadPath(const std::string& relative, const std::string& why) {
  return InvalidArgument("invalid load parameter 'file:" + logging::Escape(relative) + "': " + why);
}

bool IsInside(const std::filesystem::path& root, const std::filesystem::path& p) {
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return true;
}

Status WriteAll(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Internal(std::string("write failed: ") + std::strerror(errno));
    }
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Status WriteOne(const std::filesystem::path& root, const std::string& relative,
                const std::string& data) {
  const std::filesystem::path target = (root / relative).lexically_normal();
  std::error_code ec;
  std::filesystem::create_directories(target.parent_path(), ec);
  if (ec) return BadPath(relative, "cannot create its directory: " + ec.message());
  // Nothing in the directory can be a symlink (only this function creates entries), but check the
  // resolved location anyway: the file must land inside the directory.
  const auto parent = std::filesystem::canonical(target.parent_path(), ec);
  if (ec || !IsInside(root, parent)) {
    return BadPath(relative, "the path must stay within the model directory");
  }
  const int fd = ::open((parent / target.filename()).c_str(),
                        O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    return BadPath(relative, errno == EEXIST
                                 ? "the file is given more than once"
                                 : std::string("cannot create it: ") + std::strerror(errno));
  }
  Status s = WriteAll(fd, data);
  ::close(fd);
  if (!s.ok()) return BadPath(relative, s.message());
  return Status::Ok();
}

}  // namespace

Status ValidateOverridePath(const std::string& relative) {
  if (relative.empty()) return BadPath(relative, "the file path must not be empty");
  for (unsigned char c : relative) {
    if (c < 0x20 || c == 0x7f) return BadPath(relative, "the path contains control characters");
  }
  const std::filesystem::path p(relative);
  if (p.is_absolute() || relative.front() == '/') {
    return BadPath(relative, "the path must stay within the model directory");
  }
  for (const auto& part : p) {
    if (part == "..") return BadPath(relative, "the path must stay within the model directory");
  }
  const auto normal = p.lexically_normal();
  if (normal.empty() || normal == "." || normal.filename().empty() || normal.filename() == ".") {
    return BadPath(relative, "the path must name a file");
  }
  return Status::Ok();
}

StatusOr<std::shared_ptr<TempModelDir>> TempModelDir::Create(
    const std::vector<std::pair<std::string, std::string>>& files) {
  for (const auto& [relative, data] : files) NEREID_RETURN_IF_ERROR(ValidateOverridePath(relative));
  std::error_code ec;
  std::filesystem::path base = std::filesystem::temp_directory_path(ec);
  if (ec) base = "/tmp";
  std::string pattern = (base / "nereid-model-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    return Internal(std::string("cannot create a temporary model directory: ") +
                    std::strerror(errno));
  }
  const auto root = std::filesystem::canonical(pattern, ec);
  std::shared_ptr<TempModelDir> dir(new TempModelDir(ec ? std::filesystem::path(pattern) : root));
  for (const auto& [relative, data] : files) {
    NEREID_RETURN_IF_ERROR(WriteOne(dir->path_, relative, data));
  }
  return dir;
}

TempModelDir::~TempModelDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (ec)
    LOG_WARNING("cannot remove temporary model directory {}: {}", path_.string(), ec.message());
}

}  // namespace nereid
