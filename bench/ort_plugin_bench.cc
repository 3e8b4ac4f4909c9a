// CPU time per Execute of an onnxruntime plugin build on Triton's add/sub model (`simple`: two
// INT32 [batch,16] inputs, two outputs), without HTTP in the way: the A/B of plugin changes
// (bench/README.md, "ortbind"). Loads the plugin with dlopen as the core does; the output
// allocator hands out buffers it keeps, so the figure is the plugin's and ONNX Runtime's own.
//
// Usage: ort_plugin_bench PLUGIN.so MODEL.onnx [SECONDS] [BATCH]
// Prints one JSON line: calls, wall and CPU ns per Execute.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/testing/plugin_harness.h"

namespace {

using nereid::DataType;
using nereid::StatusOr;
namespace backend = nereid::backend;

// Two fixed output buffers, reused: no allocation of ours per call.
class ReusingAllocator final : public backend::OutputAllocator {
 public:
  bool IsRequested(std::string_view) const override { return true; }
  StatusOr<std::span<char>> Allocate(std::string_view name, DataType, std::span<const int64_t>,
                                     size_t byte_size) override {
    std::vector<char>& buffer = name == "OUTPUT0" ? out0_ : out1_;
    if (buffer.size() < byte_size) buffer.resize(byte_size);
    return std::span<char>(buffer.data(), byte_size);
  }

 private:
  std::vector<char> out0_, out1_;
};

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

constexpr char kConfig[] = R"({"name":"simple","max_batch_size":8,
  "input":[{"name":"INPUT0","data_type":"TYPE_INT32","dims":[16]},
           {"name":"INPUT1","data_type":"TYPE_INT32","dims":[16]}],
  "output":[{"name":"OUTPUT0","data_type":"TYPE_INT32","dims":[16]},
            {"name":"OUTPUT1","data_type":"TYPE_INT32","dims":[16]}]})";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PLUGIN.so MODEL.onnx [SECONDS] [BATCH]\n", argv[0]);
    return 2;
  }
  const double seconds = argc > 3 ? std::atof(argv[3]) : 2.0;
  const int64_t batch = argc > 4 ? std::atoll(argv[4]) : 1;
  nereid::backends::testing::Plugin plugin(argv[1]);
  if (!plugin.ok()) {
    std::fprintf(stderr, "error: %s\n", plugin.error().c_str());
    return 1;
  }
  std::string error;
  std::unique_ptr<backend::Backend> be = plugin.Create(backend::BackendOptions{}, &error);
  if (be == nullptr) {
    std::fprintf(stderr, "error: %s\n", error.c_str());
    return 1;
  }
  backend::ModelLoadOptions load;
  load.model_name = "simple";
  load.version = 1;
  load.model_path = argv[2];
  load.config_json = kConfig;
  auto model = be->LoadModel(load);
  if (!model.ok()) {
    std::fprintf(stderr, "error: %s\n", model.status().ToString().c_str());
    return 1;
  }
  auto instance = (*model)->CreateInstance({"simple_0", 0, "KIND_CPU", {}});
  if (!instance.ok()) {
    std::fprintf(stderr, "error: %s\n", instance.status().ToString().c_str());
    return 1;
  }
  std::vector<int32_t> a(static_cast<size_t>(batch * 16), 3), b(a.size(), 4);
  const std::vector<int64_t> shape{batch, 16};
  const std::vector<backend::TensorRef> inputs{
      {"INPUT0", DataType::kInt32, shape,
       std::span<const char>(reinterpret_cast<const char*>(a.data()), a.size() * 4)},
      {"INPUT1", DataType::kInt32, shape,
       std::span<const char>(reinterpret_cast<const char*>(b.data()), b.size() * 4)}};
  ReusingAllocator outputs;
  backend::ExecuteArgs args;
  args.inputs = inputs;
  args.outputs = &outputs;
  args.batch_size = batch;
  for (int i = 0; i < 200; ++i) (void)(*instance)->Execute(args);  // warm-up
  const double cpu_before = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  uint64_t calls = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 256; ++i) {
      if (!(*instance)->Execute(args).ok()) {
        std::fprintf(stderr, "error: Execute failed\n");
        return 1;
      }
    }
    calls += 256;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double cpu = CpuSeconds() - cpu_before;
  std::printf(
      "{\"batch\": %lld, \"calls\": %llu, \"wall_ns_per_call\": %.0f, "
      "\"cpu_ns_per_call\": %.0f}\n",
      static_cast<long long>(batch), static_cast<unsigned long long>(calls),
      elapsed * 1e9 / static_cast<double>(calls), cpu * 1e9 / static_cast<double>(calls));
  return 0;
}
