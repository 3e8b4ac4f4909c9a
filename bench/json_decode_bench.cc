// Micro benchmark of the JSON inference request decoder (DecodeInferRequest) on number-heavy
// bodies: what converting each JSON number costs (bench/README.md, "JSON number conversion").
#include <benchmark/benchmark.h>

#include <memory>
#include <random>
#include <string>

#include "frontends/http/json_request_codec.h"

namespace {

// {"inputs":[{"name":"INPUT0","datatype":<type>,"shape":[n],"data":[...]}]} with n values.
std::shared_ptr<const std::string> Body(const char* datatype, int n, bool floats) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> f(-1000.0f, 1000.0f);
  std::uniform_int_distribution<int> i(-100000, 100000);
  std::string body = std::string(R"({"inputs":[{"name":"INPUT0","datatype":")") + datatype +
                     R"(","shape":[)" + std::to_string(n) + R"(],"data":[)";
  for (int k = 0; k < n; ++k) {
    if (k > 0) body += ',';
    body += floats ? std::to_string(f(rng)) : std::to_string(i(rng));
  }
  body += "]}]}";
  return std::make_shared<const std::string>(std::move(body));
}

void Decode(benchmark::State& state, const std::shared_ptr<const std::string>& body) {
  for (auto _ : state) {
    auto r = nereid::DecodeInferRequest(body, body->size(), "m", -1);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(body->size()));
}

void BM_DecodeFp32(benchmark::State& state) {
  Decode(state, Body("FP32", static_cast<int>(state.range(0)), true));
}
BENCHMARK(BM_DecodeFp32)->Arg(16)->Arg(16384);

void BM_DecodeInt32(benchmark::State& state) {
  Decode(state, Body("INT32", static_cast<int>(state.range(0)), false));
}
BENCHMARK(BM_DecodeInt32)->Arg(16)->Arg(16384);

}  // namespace

BENCHMARK_MAIN();
