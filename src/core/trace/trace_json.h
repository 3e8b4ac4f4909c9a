// The JSON records of Triton's trace file (triton mode), one object each, as Triton's tracer.cc
// prints them; strings are JSON-escaped (Triton prints them raw). Pure functions.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "nereid/data_type.h"

namespace nereid::trace {

// `{"id":N,"model_name":"m","model_version":V[,"request_id":"r"][,"parent_id":P]}`; request_id
// only when not empty, parent_id only when not 0.
std::string StartRecord(uint64_t id, std::string_view model_name, int64_t model_version,
                        std::string_view request_id, uint64_t parent_id);
// `{"id":N,"timestamps":[{"name":"X","ns":T}]}`.
std::string TimestampRecord(uint64_t id, std::string_view name, uint64_t ns);
// `{"id":N,"activity":"A","tensor":{"name":"x","data":"1,2","shape":"1,2","dtype":"FP32"}}`.
// Elements are printed as Triton's ostream does (UINT8/INT8 as numbers here: Triton prints them
// as characters); BYTES elements are quoted; FP16/BF16 data stays empty. Data shorter than the
// shape says is printed as far as it goes.
std::string TensorRecord(uint64_t id, std::string_view activity, std::string_view name,
                         DataType type, std::span<const int64_t> shape, std::span<const char> data);

}  // namespace nereid::trace
