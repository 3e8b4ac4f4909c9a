// The load API's overrides (REFERENCE.md §5.4): a `config` JSON that replaces config.pbtxt, and
// `file:<path>` contents written into a private temporary model directory that lives as long as
// the model versions loaded from it.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nereid/status.h"

namespace nereid {

// What a frontend decoded from a load request's parameters.
struct ModelLoadParameters {
  std::optional<std::string> config_json;  // the `config` parameter
  // `file:<relative path>` entries: the path (without "file:") and the decoded contents.
  std::vector<std::pair<std::string, std::string>> files;
};

// Checks a `file:` path lexically: non-empty, relative, no control characters, no ".."
// component, not naming the directory itself. InvalidArgument otherwise.
Status ValidateOverridePath(const std::string& relative);

// A private directory (mode 0700, under the system temporary directory) holding the override
// files; removed with everything in it when the last owner lets go. Thread-safe after Create.
class TempModelDir {
 public:
  // Validates every path first (nothing is written when one is bad), then writes each file with
  // O_EXCL|O_NOFOLLOW and checks that its canonical parent stays inside the directory.
  static StatusOr<std::shared_ptr<TempModelDir>> Create(
      const std::vector<std::pair<std::string, std::string>>& files);
  ~TempModelDir();

  TempModelDir(const TempModelDir&) = delete;
  TempModelDir& operator=(const TempModelDir&) = delete;

  const std::filesystem::path& path() const { return path_; }

 private:
  explicit TempModelDir(std::filesystem::path path) : path_(std::move(path)) {}
  std::filesystem::path path_;
};

}  // namespace nereid
