// JSON bodies of the KServe v2 metadata endpoints, shaped as Triton writes them.
// Stateless functions; thread-safe.
#pragma once

#include <string>

#include "core/server/inference_server.h"

namespace nereid {

// {"name":..,"version":..,"extensions":[..]}
std::string EncodeServerMetadata(const ServerMetadata& metadata);

// {"name":..,"versions":[..],"platform":..,"inputs":[{"name","datatype","shape"}],"outputs":[..]}
std::string EncodeModelMetadata(const ModelMetadata& metadata);

}  // namespace nereid
