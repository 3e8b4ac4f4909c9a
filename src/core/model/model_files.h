// Reading the auxiliary files a model configuration names (label files, warmup data): the path
// must resolve, symlinks included, to a regular file inside the given directory, and the file is
// size-checked before anything is allocated. Thread-safe pure functions of the file system.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

#include "nereid/status.h"

namespace nereid {

// The largest auxiliary file read into memory.
inline constexpr size_t kMaxModelAuxFileBytes = 256 * 1024 * 1024;

// Reads `base_dir/relative`. InvalidArgument naming `what` when the path is absolute, escapes
// `base_dir` (through "..", or a symlink anywhere on the way), is not a regular file, is larger
// than max_bytes or cannot be read.
StatusOr<std::string> ReadContainedFile(const std::filesystem::path& base_dir,
                                        const std::string& relative, const std::string& what,
                                        size_t max_bytes = kMaxModelAuxFileBytes);

}  // namespace nereid
