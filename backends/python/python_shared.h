// What the Python backend's model, instances and stub questions share: the backend's settings
// (--backend-config=python,...), a model's facts and the log helpers.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "nereid/backend_api.h"
#include "python/custom_metrics.h"
#include "python/stub_process.h"
#include "python/unload_signal.h"

namespace nereid::backends::python {

inline constexpr const char* kPython =
    "/usr/bin/python3";  // Debian's; never one from a model folder

struct Settings {
  std::chrono::seconds stub_timeout{30};
  uint64_t shm_default_size = 1 << 20;  // Triton's defaults: 1 MiB, grown by 1 MiB
  uint64_t shm_growth_size = 1 << 20;
  backend::LogFunction log;
  backend::InferFunction infer;   // BLS
  backend::ModelControl control;  // pb_utils.is_model_ready / load_model / unload_model
  // pb_utils.MetricFamily of every model (a family name is global, as in Triton).
  std::shared_ptr<CustomMetrics> metrics = std::make_shared<CustomMetrics>();
};

// What the instances of one model share.
struct ModelShared {
  std::string model_name;
  StubCommand command;
  std::string config_json;
  std::string model_dir;
  int64_t version = 0;
  bool decoupled = false;
  std::vector<std::string> outputs;  // configured output names, in config order
  std::shared_ptr<const Settings> settings;
  // The model's unload notice (backend API v6), which its instances' watchers act on.
  std::shared_ptr<UnloadSignal> unload = std::make_shared<UnloadSignal>();
};

void Log(const Settings& settings, backend::LogLevel level, const std::string& message);

// The backend's level of a stub "log" message (pb_utils.Logger's numbering).
backend::LogLevel StubLogLevel(int level);

}  // namespace nereid::backends::python
