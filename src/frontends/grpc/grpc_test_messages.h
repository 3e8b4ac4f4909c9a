// Test messages shared by the gRPC frontend's tests.
#pragma once

#include <cstring>
#include <string>

#include "grpc_service.pb.h"

namespace nereid::testing_grpc {

// bench/grpc_bench.py's request: identity_fp32, INPUT0 FP32 [1,16] = 0..15 in raw_input_contents.
inline inference::ModelInferRequest BenchRequest() {
  inference::ModelInferRequest m;
  m.set_model_name("identity_fp32");
  auto* in = m.add_inputs();
  in->set_name("INPUT0");
  in->set_datatype("FP32");
  in->add_shape(1);
  in->add_shape(16);
  std::string raw(64, '\0');
  for (int i = 0; i < 16; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(raw.data() + 4 * i, &f, sizeof(f));
  }
  m.add_raw_input_contents(raw);
  return m;
}

}  // namespace nereid::testing_grpc
