#include "core/repository/model_name.h"

#include <string>

#include "common/error_text.h"

namespace nereid {

Status ValidateModelName(std::string_view name) {
  bool blank = true;
  for (unsigned char c : name) {
    if (c < 0x20 || c == 0x7f) {
      return InvalidArgument("invalid model name: model name must not contain control characters");
    }
    if (c != ' ' && c != '\t') blank = false;
  }
  if (blank)
    return InvalidArgument("Model name cannot be empty. Please enter a valid name to deploy.");
  // A name is one directory name: separators would reach into other directories, and "." and ".."
  // name the repository itself and its parent. Other dotted names ("...", "a..b", ".hidden") are
  // ordinary directory names.
  if (name.find('/') != std::string_view::npos || name.find('\\') != std::string_view::npos ||
      name == "." || name == "..") {
    return InvalidArgument("invalid model name '" + ClientText(name) +
                           "': model name must not contain path traversal characters");
  }
  return Status::Ok();
}

}  // namespace nereid
