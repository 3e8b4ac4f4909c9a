#include "core/model/model_files.h"

#include <fstream>

namespace nereid {
namespace {

bool IsInside(const std::filesystem::path& root, const std::filesystem::path& p) {
  auto r = root.begin();
  auto q = p.begin();
  for (; r != root.end(); ++r, ++q) {
    if (q == p.end() || *r != *q) return false;
  }
  return q != p.end();
}

}  // namespace

StatusOr<std::string> ReadContainedFile(const std::filesystem::path& base_dir,
                                        const std::string& relative, const std::string& what,
                                        size_t max_bytes) {
  const std::filesystem::path rel(relative);
  if (relative.empty() || rel.is_absolute()) {
    return InvalidArgument(what + " '" + relative + "' must be a relative path");
  }
  std::error_code ec;
  const auto root = std::filesystem::canonical(base_dir, ec);
  if (ec) return InvalidArgument(what + " '" + relative + "': " + ec.message());
  const auto path = std::filesystem::canonical(root / rel, ec);
  if (ec) return InvalidArgument(what + " '" + relative + "' cannot be read: " + ec.message());
  if (!IsInside(root, path)) {
    return InvalidArgument(what + " '" + relative + "' must stay inside its directory");
  }
  if (!std::filesystem::is_regular_file(path, ec)) {
    return InvalidArgument(what + " '" + relative + "' is not a regular file");
  }
  const auto size = std::filesystem::file_size(path, ec);
  if (ec) return InvalidArgument(what + " '" + relative + "' cannot be read: " + ec.message());
  if (size > max_bytes) {
    return InvalidArgument(what + " '" + relative + "' is larger than " +
                           std::to_string(max_bytes) + " bytes");
  }
  std::string data(size, '\0');
  std::ifstream in(path, std::ios::binary);
  in.read(data.data(), static_cast<std::streamsize>(size));
  if (!in || static_cast<size_t>(in.gcount()) != size) {
    return InvalidArgument(what + " '" + relative + "' cannot be read completely");
  }
  return data;
}

}  // namespace nereid
