// Per-call cost of ONNX Runtime's Run for a tiny model, variant by variant (bench/README.md,
// "ortbind: ONNX Runtime per-call cost"). For each variant it prints the wall-clock and CPU time
// per call and the heap allocations per call (malloc is interposed below and counted), so the
// plugin's choices can be compared without HTTP in the way:
//   ort_alloc    inputs over caller memory, ORT allocates the outputs, copied out (main's plugin)
//   prealloc     inputs over caller memory, outputs created over caller memory before Run
//   iobinding    the same through Ort::IoBinding, bound anew every call
//   new_runopts  ort_alloc with a new RunOptions per call
//   threads0     ort_alloc, intra-op threads 0 (ONNX Runtime's default: one per core)
//   spin         ort_alloc, intra-op threads 0 and spinning allowed (ORT's default)
// The model's inputs and outputs must be numeric with fixed dims except a leading -1 (replaced by
// 1); inputs are zeros.
//
// Usage: ort_run_bench MODEL.onnx [SECONDS_PER_VARIANT]
#include <onnxruntime_cxx_api.h>
#include <sys/resource.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

std::atomic<uint64_t> g_mallocs{0};

}  // namespace

// Counting interposers: glibc's own entry points do the work.
extern "C" void* __libc_malloc(size_t);
extern "C" void* __libc_calloc(size_t, size_t);
extern "C" void* __libc_realloc(void*, size_t);
extern "C" void* malloc(size_t n) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(size_t a, size_t b) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(a, b);
}
extern "C" void* realloc(void* p, size_t n) {
  g_mallocs.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}

namespace {

struct Io {
  std::vector<std::string> names;
  std::vector<const char*> cnames;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<ONNXTensorElementDataType> types;
  std::vector<std::vector<char>> buffers;
};

size_t ElementSize(ONNXTensorElementDataType t) {
  switch (t) {
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_DOUBLE:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT64:
      return 8;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BFLOAT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT16:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT16:
      return 2;
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_BOOL:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_INT8:
    case ONNX_TENSOR_ELEMENT_DATA_TYPE_UINT8:
      return 1;
    default:
      return 4;
  }
}

Io Describe(const Ort::Session& session, bool inputs) {
  Ort::AllocatorWithDefaultOptions allocator;
  Io io;
  const size_t n = inputs ? session.GetInputCount() : session.GetOutputCount();
  for (size_t i = 0; i < n; ++i) {
    io.names.push_back(inputs ? session.GetInputNameAllocated(i, allocator).get()
                              : session.GetOutputNameAllocated(i, allocator).get());
    Ort::TypeInfo type = inputs ? session.GetInputTypeInfo(i) : session.GetOutputTypeInfo(i);
    auto info = type.GetTensorTypeAndShapeInfo();
    std::vector<int64_t> shape = info.GetShape();
    size_t count = 1;
    for (int64_t& d : shape) {
      if (d < 0) d = 1;
      count *= static_cast<size_t>(d);
    }
    io.shapes.push_back(shape);
    io.types.push_back(info.GetElementType());
    io.buffers.emplace_back(count * ElementSize(info.GetElementType()));
  }
  for (const std::string& s : io.names) io.cnames.push_back(s.c_str());
  return io;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

void Measure(const char* name, double seconds, const std::function<void()>& call) {
  for (int i = 0; i < 100; ++i) call();  // warm-up: arenas, memory patterns
  const uint64_t mallocs_before = g_mallocs.load();
  const double cpu_before = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  uint64_t calls = 0;
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < 256; ++i) call();
    calls += 256;
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  const double cpu = CpuSeconds() - cpu_before;
  const uint64_t mallocs = g_mallocs.load() - mallocs_before;
  std::printf(
      "{\"variant\": \"%s\", \"calls\": %llu, \"wall_ns_per_call\": %.0f, "
      "\"cpu_ns_per_call\": %.0f, \"mallocs_per_call\": %.2f}\n",
      name, static_cast<unsigned long long>(calls), elapsed * 1e9 / static_cast<double>(calls),
      cpu * 1e9 / static_cast<double>(calls),
      static_cast<double>(mallocs) / static_cast<double>(calls));
  std::fflush(stdout);
}

Ort::SessionOptions Options(int intra_threads, bool spin) {
  Ort::SessionOptions options;
  options.SetIntraOpNumThreads(intra_threads);
  options.SetInterOpNumThreads(1);
  options.SetGraphOptimizationLevel(ORT_ENABLE_ALL);
  options.SetExecutionMode(ORT_SEQUENTIAL);
  if (!spin) {
    options.AddConfigEntry("session.intra_op.allow_spinning", "0");
    options.AddConfigEntry("session.inter_op.allow_spinning", "0");
  }
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.onnx [SECONDS_PER_VARIANT]\n", argv[0]);
    return 2;
  }
  const char* path = argv[1];
  const double seconds = argc > 2 ? std::atof(argv[2]) : 2.0;
  try {
    Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "ort_run_bench");
    Ort::Session session(env, path, Options(1, false));
    Io in = Describe(session, true);
    Io out = Describe(session, false);
    const Ort::MemoryInfo cpu = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::RunOptions run_options;
    std::vector<Ort::Value> inputs;
    std::vector<Ort::Value> outputs;
    inputs.reserve(in.names.size());
    outputs.reserve(out.names.size());
    auto make_inputs = [&] {
      inputs.clear();
      for (size_t i = 0; i < in.names.size(); ++i) {
        inputs.push_back(Ort::Value::CreateTensor(cpu, in.buffers[i].data(), in.buffers[i].size(),
                                                  in.shapes[i].data(), in.shapes[i].size(),
                                                  in.types[i]));
      }
    };
    auto ort_alloc = [&](Ort::Session& s, const Ort::RunOptions& ro) {
      make_inputs();
      outputs.clear();
      for (size_t i = 0; i < out.names.size(); ++i) outputs.emplace_back(nullptr);
      s.Run(ro, in.cnames.data(), inputs.data(), inputs.size(), out.cnames.data(), outputs.data(),
            outputs.size());
      for (size_t i = 0; i < out.names.size(); ++i) {
        std::memcpy(out.buffers[i].data(), outputs[i].GetTensorRawData(), out.buffers[i].size());
      }
    };
    Measure("ort_alloc", seconds, [&] { ort_alloc(session, run_options); });
    Measure("prealloc", seconds, [&] {
      make_inputs();
      outputs.clear();
      for (size_t i = 0; i < out.names.size(); ++i) {
        outputs.push_back(Ort::Value::CreateTensor(cpu, out.buffers[i].data(),
                                                   out.buffers[i].size(), out.shapes[i].data(),
                                                   out.shapes[i].size(), out.types[i]));
      }
      session.Run(run_options, in.cnames.data(), inputs.data(), inputs.size(), out.cnames.data(),
                  outputs.data(), outputs.size());
    });
    Ort::IoBinding binding(session);
    Measure("iobinding", seconds, [&] {
      make_inputs();
      outputs.clear();
      binding.ClearBoundInputs();
      binding.ClearBoundOutputs();
      for (size_t i = 0; i < in.names.size(); ++i) binding.BindInput(in.cnames[i], inputs[i]);
      for (size_t i = 0; i < out.names.size(); ++i) {
        outputs.push_back(Ort::Value::CreateTensor(cpu, out.buffers[i].data(),
                                                   out.buffers[i].size(), out.shapes[i].data(),
                                                   out.shapes[i].size(), out.types[i]));
        binding.BindOutput(out.cnames[i], outputs[i]);
      }
      session.Run(run_options, binding);
    });
    // Values made once over buffers the caller owns: copies in and out, no OrtValue per call.
    std::vector<Ort::Value> fixed_in, fixed_out;
    Io in_copy = in, out_copy = out;  // the "request" and "response" buffers
    for (size_t i = 0; i < in.names.size(); ++i) {
      fixed_in.push_back(Ort::Value::CreateTensor(cpu, in.buffers[i].data(), in.buffers[i].size(),
                                                  in.shapes[i].data(), in.shapes[i].size(),
                                                  in.types[i]));
    }
    for (size_t i = 0; i < out.names.size(); ++i) {
      fixed_out.push_back(Ort::Value::CreateTensor(cpu, out.buffers[i].data(),
                                                   out.buffers[i].size(), out.shapes[i].data(),
                                                   out.shapes[i].size(), out.types[i]));
    }
    Measure("reuse_copy", seconds, [&] {
      for (size_t i = 0; i < in.names.size(); ++i) {
        std::memcpy(in.buffers[i].data(), in_copy.buffers[i].data(), in.buffers[i].size());
      }
      session.Run(run_options, in.cnames.data(), fixed_in.data(), fixed_in.size(),
                  out.cnames.data(), fixed_out.data(), fixed_out.size());
      for (size_t i = 0; i < out.names.size(); ++i) {
        std::memcpy(out_copy.buffers[i].data(), out.buffers[i].data(), out.buffers[i].size());
      }
    });
    Ort::IoBinding fixed_binding(session);
    for (size_t i = 0; i < in.names.size(); ++i) fixed_binding.BindInput(in.cnames[i], fixed_in[i]);
    for (size_t i = 0; i < out.names.size(); ++i) {
      fixed_binding.BindOutput(out.cnames[i], fixed_out[i]);
    }
    Measure("reuse_iobinding", seconds, [&] {
      for (size_t i = 0; i < in.names.size(); ++i) {
        std::memcpy(in.buffers[i].data(), in_copy.buffers[i].data(), in.buffers[i].size());
      }
      session.Run(run_options, fixed_binding);
      for (size_t i = 0; i < out.names.size(); ++i) {
        std::memcpy(out_copy.buffers[i].data(), out.buffers[i].data(), out.buffers[i].size());
      }
    });
    Measure("new_runopts", seconds, [&] { ort_alloc(session, Ort::RunOptions()); });
    {
      Ort::Session threads0(env, path, Options(0, false));
      Measure("threads0", seconds, [&] { ort_alloc(threads0, run_options); });
    }
    {
      Ort::Session spin(env, path, Options(0, true));
      Measure("spin", seconds, [&] { ort_alloc(spin, run_options); });
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
