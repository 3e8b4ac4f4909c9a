// The JSON body of the settings extensions (logging, trace) and of the repository extension's
// load/unload/index requests: parsed into an object DOM (iteratively: no recursion however deep it
// nests), with the texts those handlers answer. Stateless; thread-safe.
#pragma once

#include <rapidjson/document.h>

#include <string_view>

#include "nereid/status.h"

namespace nereid {

// False (and `doc` untouched) for a body that is empty or only blanks: nothing to change. A body
// that is not JSON, or not an object, is INVALID_ARGUMENT.
StatusOr<bool> ParseSettingsBody(std::string_view body, rapidjson::Document* doc);

}  // namespace nereid
