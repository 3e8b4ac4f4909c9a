// The load API's overrides: the HTTP load request body (`config` JSON and base64 `file:`
// contents), then what the repository does with them before touching the disk: the config JSON
// parsed and validated as a load-API config, each file path checked lexically. The index and
// unload bodies share the same decoder and are tried too. No file is written.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/config/model_config_json.h"
#include "core/config/model_config_validate.h"
#include "core/repository/load_override.h"
#include "frontends/http/repository_request_codec.h"
#include "model_config.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  (void)nereid::DecodeRepositoryIndexRequest(body);
  (void)nereid::DecodeModelUnloadRequest(body);
  auto params = nereid::DecodeModelLoadRequest(body);
  if (!params.ok()) return 0;
  for (const auto& [path, contents] : params->files) (void)nereid::ValidateOverridePath(path);
  if (params->config_json) {
    auto config = nereid::config::ModelConfigFromJson(*params->config_json);
    if (config.ok()) {
      nereid::config::ValidateOptions opts;
      opts.model_dir_name = "model";
      opts.name_may_differ = true;
      (void)nereid::config::ValidateModelConfig(*config, opts);
    }
  }
  return 0;
}
