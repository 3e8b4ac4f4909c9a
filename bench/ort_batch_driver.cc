// In-process reference for bench/batch_bench.py: runs one ONNX model through ONNX Runtime's C++
// API directly, on batches of a fixed size, with the session settings Nereid's onnxruntime
// backend uses by default (intra-op 1, inter-op 1, sequential, ORT_ENABLE_ALL, no spinning), and
// prints inferences per second. One input tensor [batch, width] of FP32, random, made once; the
// output is read back (summed) so no work can be skipped. Also prints the CPU time the process
// used while measuring, so runs on a busy machine can be compared per CPU-second.
//
// Usage: ort_batch_driver MODEL.onnx INPUT_NAME OUTPUT_NAME WIDTH BATCH SECONDS
#include <onnxruntime_cxx_api.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: %s MODEL INPUT OUTPUT WIDTH BATCH SECONDS\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const char* input_name = argv[2];
  const char* output_name = argv[3];
  const int64_t width = std::atoll(argv[4]);
  const int64_t batch = std::atoll(argv[5]);
  const double seconds = std::atof(argv[6]);
  try {
    Ort::Env env(ORT_LOGGING_LEVEL_WARNING, "ort_batch_driver");
    Ort::SessionOptions options;
    options.SetIntraOpNumThreads(1);
    options.SetInterOpNumThreads(1);
    options.SetGraphOptimizationLevel(ORT_ENABLE_ALL);
    options.SetExecutionMode(ORT_SEQUENTIAL);
    options.AddConfigEntry("session.intra_op.allow_spinning", "0");
    options.AddConfigEntry("session.inter_op.allow_spinning", "0");
    Ort::Session session(env, path.c_str(), options);
    std::vector<float> data(static_cast<size_t>(batch * width));
    std::mt19937 rng(1);
    std::normal_distribution<float> dist;
    for (float& v : data) v = dist(rng);
    const int64_t shape[] = {batch, width};
    auto info = Ort::MemoryInfo::CreateCpu(OrtArenaAllocator, OrtMemTypeDefault);
    Ort::RunOptions run_options;
    double checksum = 0;
    int64_t runs = 0;
    auto run_once = [&] {
      Ort::Value in = Ort::Value::CreateTensor<float>(info, data.data(), data.size(), shape, 2);
      auto out = session.Run(run_options, &input_name, &in, 1, &output_name, 1);
      const float* o = out[0].GetTensorData<float>();
      checksum += o[0];
    };
    for (int i = 0; i < 5; ++i) run_once();  // warm-up
    auto cpu_now = [] {
      rusage u{};
      getrusage(RUSAGE_SELF, &u);
      return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
    };
    const double cpu_start = cpu_now();
    const auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      run_once();
      ++runs;
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    const double cpu = cpu_now() - cpu_start;
    std::printf(
        "{\"batch\": %lld, \"runs\": %lld, \"seconds\": %.3f, \"infer_per_s\": %.1f, "
        "\"cpu_seconds\": %.3f, \"checksum\": %g}\n",
        static_cast<long long>(batch), static_cast<long long>(runs), elapsed,
        static_cast<double>(runs * batch) / elapsed, cpu, checksum);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
