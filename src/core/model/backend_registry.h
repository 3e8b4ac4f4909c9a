// BackendRegistry: the backend plugins found in the backend directory, loaded with dlopen at
// start-up, and the lookup from a model configuration to the backend that serves it.
//
// Thread-safety: immutable after Create; every method is safe from any thread.
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "nereid/backend_api.h"

namespace nereid {

class BackendRegistry {
 public:
  struct Options {
    std::filesystem::path directory;
    // --backend-config entries: backend name -> (key, value) list.
    std::map<std::string, std::vector<std::pair<std::string, std::string>>> config;
    // Handed to every plugin (BackendOptions::infer): runs inferences on the server.
    backend::InferFunction infer;
    // Handed to every plugin (BackendOptions::model_control): readiness, load and unload.
    backend::ModelControl model_control;
  };

  // Loads every libnereid_<name>.so in the directory. A plugin that fails to load is logged and
  // skipped (models needing it fail with a clear error); an unreadable directory is an error.
  static StatusOr<std::unique_ptr<BackendRegistry>> Create(const Options& options);
  ~BackendRegistry();

  struct Entry {
    backend::Backend* backend = nullptr;  // owned by the registry
    backend::BackendInfo info;
  };

  const Entry* FindByName(const std::string& name) const;
  const Entry* FindByPlatform(const std::string& platform) const;
  // The backend whose default model file exists in one of `version_dirs` (auto-detection when a
  // config names neither platform nor backend).
  const Entry* DetectFromFiles(const std::vector<std::filesystem::path>& version_dirs) const;
  std::vector<std::string> Names() const;
  // Every plugin's own metric families (Backend::MetricFamilies), in plugin order.
  std::vector<backend::MetricFamilySnapshot> BackendMetricFamilies() const;

 private:
  struct Plugin;
  BackendRegistry() = default;
  std::vector<std::unique_ptr<Plugin>> plugins_;
};

}  // namespace nereid
