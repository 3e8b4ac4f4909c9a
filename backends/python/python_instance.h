// The instances of a Python model (python_instance.cc): each runs the model's model.py in a stub
// process of its own, restarted when it dies (docs/adr/0015-instance-health.md).
#pragma once

#include <memory>

#include "nereid/backend_api.h"
#include "nereid/status.h"
#include "python/python_shared.h"

namespace nereid::backends::python {

// Starts an instance's stub and runs initialize(args) (the error carries the Python error text),
// then the watcher thread that restarts the stub whenever it dies.
StatusOr<std::unique_ptr<backend::ModelInstance>> StartPythonInstance(
    std::shared_ptr<const ModelShared> model, backend::InstanceOptions options);

}  // namespace nereid::backends::python
