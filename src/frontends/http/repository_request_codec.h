// The JSON bodies of Triton's model repository extension over HTTP (REFERENCE.md §1.2 rows
// 12-14), decoded without I/O so the handlers stay thin and the decoders can be fuzzed:
//   index   {"ready": bool}
//   load    {"parameters": {"config": "<json>", "file:<path>": "<base64>"}}
//   unload  {"parameters": {"unload_dependents": bool}}
// Every body is optional: empty or whitespace-only means "no options". Malformed input is
// InvalidArgument with Triton's message. Stateless functions; thread-safe.
#pragma once

#include <string_view>

#include "core/repository/load_override.h"
#include "nereid/status.h"

namespace nereid {

// The `ready` flag of an index request (false when absent).
StatusOr<bool> DecodeRepositoryIndexRequest(std::string_view body);

// The `config` override and the base64-decoded `file:` contents of a load request. Paths are not
// checked here: the repository validates them before writing anything (ValidateOverridePath).
StatusOr<ModelLoadParameters> DecodeModelLoadRequest(std::string_view body);

// The `unload_dependents` flag of an unload request (false when absent).
StatusOr<bool> DecodeModelUnloadRequest(std::string_view body);

}  // namespace nereid
