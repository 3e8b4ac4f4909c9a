// Model name validation for every API that names a model to load or unload (REFERENCE.md §5.4,
// §6.4): a name becomes a directory name, so it must not be able to point anywhere else.
// Thread-safe pure function.
#pragma once

#include <string_view>

#include "nereid/status.h"

namespace nereid {

// InvalidArgument when `name` is empty or only whitespace (Triton's "Model name cannot be empty.
// Please enter a valid name to deploy."), contains '/' or '\\', is "." or "..", or contains a
// control character (including NUL). Other dotted names ("...", "a..b") are valid. The message
// never echoes control characters.
Status ValidateModelName(std::string_view name);

}  // namespace nereid
