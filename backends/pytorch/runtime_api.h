// The contract between the light pytorch plugin (libnereid_pytorch.so, loaded with every server)
// and the runtime library that links LibTorch (pytorch/libnereid_pytorch_runtime.so beside it),
// which the plugin loads on the first model load only: libtorch and its ~280 shared libraries
// take one to two seconds and ~70 MiB to map and initialise, a cost a server without TorchScript
// models must not pay.
//
// The runtime exports these C symbols. NereidTorchRuntimeCreate returns a Backend whose LoadModel
// does the work (Info and AutoCompleteConfig stay in the plugin), or nullptr with *error set. No
// exception leaves either function.
#pragma once

#include <cstdint>
#include <string>

#include "nereid/backend_api.h"

inline constexpr char kNereidTorchRuntimeFile[] = "pytorch/libnereid_pytorch_runtime.so";

using NereidTorchRuntimeApiVersionFn = uint32_t (*)();  // must return kBackendApiVersion
using NereidTorchRuntimeCreateFn =
    nereid::backend::Backend* (*)(const nereid::backend::BackendOptions*, std::string*);
