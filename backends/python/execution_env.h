// A Python model's EXECUTION_ENV_PATH parameter (Triton's python_backend): a directory
// environment (a venv, an unpacked conda env) with `bin/activate`. Nereid never runs the
// environment's own python or its activate script: the stub is Debian's /usr/bin/python3 with the
// environment's site-packages put first on sys.path and VIRTUAL_ENV / PATH set as activate would
// (docs/python_backend.md). The Python version check happens in the stub, which knows its own.
#pragma once

#include <string>

#include "nereid/status.h"
#include "rapidjson/document.h"

namespace nereid::backends::python {

// The environment directory the model's configuration names ("" when it names none).
// `$$TRITON_MODEL_DIRECTORY` is replaced by `model_dir`; a path written with it must stay inside
// the model directory once resolved. Errors (INVALID_ARG or INTERNAL, Triton's text where Triton
// has one): a parameter without a string value, a path that escapes the model directory, a file
// (a conda-pack tarball: only directory environments are supported), no `bin/activate`.
StatusOr<std::string> ExecutionEnvPath(const rapidjson::Value& config,
                                       const std::string& model_dir);

}  // namespace nereid::backends::python
