#include "core/model/backend_registry.h"

#include <dlfcn.h>

#include <iterator>
#include <system_error>

#include "common/logging.h"

namespace nereid {

struct BackendRegistry::Plugin {
  void* handle = nullptr;
  Entry entry;
  std::unique_ptr<backend::Backend> backend;
  ~Plugin() {
    backend.reset();  // the object's code lives in the library: destroy before dlclose
    if (handle != nullptr) dlclose(handle);
  }
};

namespace {

void LogFromBackend(const std::string& name, backend::LogLevel level, std::string_view msg) {
  switch (level) {
    case backend::LogLevel::kError:
      LOG_ERROR("[{}] {}", name, msg);
      break;
    case backend::LogLevel::kWarning:
      LOG_WARNING("[{}] {}", name, msg);
      break;
    case backend::LogLevel::kInfo:
      LOG_INFO("[{}] {}", name, msg);
      break;
    case backend::LogLevel::kVerbose:
      LOG_VERBOSE(1, "[{}] {}", name, msg);
      break;
  }
}

// Name of the backend a plugin file provides: libnereid_<name>.so -> <name>.
std::string PluginName(const std::filesystem::path& file) {
  const std::string base = file.filename().string();
  const std::string prefix = "libnereid_";
  const std::string suffix = ".so";
  if (base.size() <= prefix.size() + suffix.size() || base.rfind(prefix, 0) != 0 ||
      base.compare(base.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return "";
  }
  return base.substr(prefix.size(), base.size() - prefix.size() - suffix.size());
}

}  // namespace

BackendRegistry::~BackendRegistry() = default;

StatusOr<std::unique_ptr<BackendRegistry>> BackendRegistry::Create(const Options& options) {
  std::unique_ptr<BackendRegistry> registry(new BackendRegistry());
  std::error_code ec;
  std::filesystem::directory_iterator it(options.directory, ec);
  if (ec) {
    return InvalidArgument("cannot read backend directory '" + options.directory.string() +
                           "': " + ec.message());
  }
  std::vector<std::filesystem::path> files;
  for (const auto& e : it) {
    if (!PluginName(e.path()).empty()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    const std::string name = PluginName(file);
    auto plugin = std::make_unique<Plugin>();
    plugin->handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (plugin->handle == nullptr) {
      LOG_ERROR("failed to load backend '{}': {}", name, dlerror());
      continue;
    }
    auto version_fn = reinterpret_cast<NereidBackendApiVersionFn>(
        dlsym(plugin->handle, "NereidBackendApiVersion"));
    auto create_fn =
        reinterpret_cast<NereidBackendCreateFn>(dlsym(plugin->handle, "NereidBackendCreate"));
    if (version_fn == nullptr || create_fn == nullptr) {
      LOG_ERROR("backend '{}' ({}) lacks the Nereid entry points", name, file.string());
      continue;
    }
    if (version_fn() != backend::kBackendApiVersion) {
      LOG_ERROR("backend '{}' was built for backend API {}, this server speaks {}", name,
                version_fn(), backend::kBackendApiVersion);
      continue;
    }
    backend::BackendOptions bo;
    if (auto c = options.config.find(name); c != options.config.end()) bo.config = c->second;
    bo.infer = options.infer;
    bo.model_control = options.model_control;
    bo.log = [name](backend::LogLevel level, std::string_view msg) {
      LogFromBackend(name, level, msg);
    };
    std::string error;
    plugin->backend.reset(create_fn(&bo, &error));
    if (!plugin->backend) {
      LOG_ERROR("backend '{}' failed to initialize: {}", name, error);
      continue;
    }
    plugin->entry.backend = plugin->backend.get();
    plugin->entry.info = plugin->backend->Info();
    LOG_INFO("loaded backend '{}' from {}", plugin->entry.info.name, file.string());
    registry->plugins_.push_back(std::move(plugin));
  }
  return registry;
}

const BackendRegistry::Entry* BackendRegistry::FindByName(const std::string& name) const {
  for (const auto& p : plugins_) {
    if (p->entry.info.name == name) return &p->entry;
  }
  return nullptr;
}

const BackendRegistry::Entry* BackendRegistry::FindByPlatform(const std::string& platform) const {
  for (const auto& p : plugins_) {
    for (const auto& pl : p->entry.info.platforms) {
      if (pl == platform) return &p->entry;
    }
  }
  return nullptr;
}

const BackendRegistry::Entry* BackendRegistry::DetectFromFiles(
    const std::vector<std::filesystem::path>& version_dirs) const {
  for (const auto& p : plugins_) {
    const std::string& file = p->entry.info.default_model_filename;
    if (file.empty()) continue;
    for (const auto& dir : version_dirs) {
      std::error_code ec;
      if (std::filesystem::exists(dir / file, ec)) return &p->entry;
    }
  }
  return nullptr;
}

std::vector<std::string> BackendRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& p : plugins_) names.push_back(p->entry.info.name);
  return names;
}

std::vector<backend::MetricFamilySnapshot> BackendRegistry::BackendMetricFamilies() const {
  std::vector<backend::MetricFamilySnapshot> out;
  for (const auto& p : plugins_) {
    std::vector<backend::MetricFamilySnapshot> families = p->backend->MetricFamilies();
    std::move(families.begin(), families.end(), std::back_inserter(out));
  }
  return out;
}

}  // namespace nereid
