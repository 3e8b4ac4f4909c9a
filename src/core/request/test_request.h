// Test-only: requests built in one line for tests that run models.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <numeric>
#include <span>
#include <string>
#include <utility>

#include "core/request/inference_request.h"

namespace nereid::testing {

// A request for `model` with one zero-filled FP32 input "INPUT0" of `shape` (it owns its data).
inline std::unique_ptr<InferenceRequest> ZeroFp32Request(const std::string& model, Shape shape) {
  const int64_t elements =
      std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<int64_t>());
  auto r = std::make_unique<InferenceRequest>();
  r->model_name = model;
  auto data = std::make_shared<const std::string>(static_cast<size_t>(elements) * 4, '\0');
  InferInput in;
  in.name = "INPUT0";
  in.data_type = DataType::kFp32;
  in.shape = std::move(shape);
  in.data = std::span<const char>(data->data(), data->size());
  r->inputs.push_back(std::move(in));
  r->KeepAlive(data);
  return r;
}

}  // namespace nereid::testing
