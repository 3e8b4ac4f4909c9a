#include "python/execution_env.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "common/config_json.h"

namespace nereid::backends::python {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kModelDirVar = "$$TRITON_MODEL_DIRECTORY";

// True when `path` is `dir` or below it (both already resolved).
bool Inside(const fs::path& path, const fs::path& dir) {
  auto [d, p] = std::mismatch(dir.begin(), dir.end(), path.begin(), path.end());
  return d == dir.end();
}

}  // namespace

StatusOr<std::string> ExecutionEnvPath(const rapidjson::Value& config,
                                       const std::string& model_dir) {
  const rapidjson::Value* params = FindMember(config, "parameters");
  const rapidjson::Value* env =
      params != nullptr ? FindMember(*params, "EXECUTION_ENV_PATH") : nullptr;
  if (env == nullptr) return std::string();
  const rapidjson::Value* value = FindMember(*env, "string_value");
  if (value == nullptr || !value->IsString()) {
    return InvalidArgument("EXECUTION_ENV_PATH must have a string_value");
  }
  std::string path(value->GetString(), value->GetStringLength());
  bool uses_model_dir = false;
  for (size_t at = path.find(kModelDirVar); at != std::string::npos;
       at = path.find(kModelDirVar, at + model_dir.size())) {
    path.replace(at, kModelDirVar.size(), model_dir);
    uses_model_dir = true;
  }
  std::error_code ec;
  const fs::path resolved = fs::weakly_canonical(fs::path(path), ec);
  if (ec) return InvalidArgument("EXECUTION_ENV_PATH '" + path + "': " + ec.message());
  if (uses_model_dir) {
    const fs::path dir = fs::weakly_canonical(fs::path(model_dir), ec);
    if (ec || !Inside(resolved, dir)) {
      return InvalidArgument("EXECUTION_ENV_PATH '" + path +
                             "' resolves outside the model directory '" + model_dir + "'");
    }
  }
  if (fs::is_regular_file(resolved, ec)) {
    return InvalidArgument("EXECUTION_ENV_PATH '" + path +
                           "' is a file: only directory environments (with bin/activate) are "
                           "supported, not conda-pack archives");
  }
  if (!fs::is_regular_file(resolved / "bin" / "activate", ec)) {
    return Internal("Path " + path + "/bin/activate" +
                    " does not exist. The Python environment should contain an 'activate' "
                    "script.");
  }
  return resolved.string();
}

}  // namespace nereid::backends::python
