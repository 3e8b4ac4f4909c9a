// config.pbtxt: protobuf text parsing, then the validation every loaded configuration goes
// through. The same bytes are also tried as the JSON form the load API's `config` override uses.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "core/config/model_config_io.h"
#include "core/config/model_config_json.h"
#include "core/config/model_config_validate.h"
#include "model_config.pb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  nereid::config::ValidateOptions opts;
  opts.model_dir_name = "model";
  auto parsed = nereid::config::ParseModelConfigText(text, "/repo/model/config.pbtxt");
  if (parsed.ok()) (void)nereid::config::ValidateModelConfig(*parsed, opts);
  auto from_json = nereid::config::ModelConfigFromJson(text);
  if (from_json.ok()) {
    opts.name_may_differ = true;
    (void)nereid::config::ValidateModelConfig(*from_json, opts);
  }
  return 0;
}
