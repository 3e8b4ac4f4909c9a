// Micro benchmark of the serving-table read on the request path (issue 14 item 4): what one
// lookup's snapshot costs with libstdc++ 12's std::atomic<std::shared_ptr> (not lock-free: a
// spin bit in the pointer word, taken by readers too), against a mutex-guarded shared_ptr, with
// 1 and 2 reader threads (this machine's cores), while a writer publishes rarely or never.
// bench/README.md ("Serving table read") has the figures.
#include <benchmark/benchmark.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace {

using Table = std::map<std::string, std::map<int64_t, std::shared_ptr<int>>>;

std::shared_ptr<const Table> MakeTable() {
  auto t = std::make_shared<Table>();
  for (int i = 0; i < 16; ++i) (*t)["model_" + std::to_string(i)][1] = std::make_shared<int>(i);
  return t;
}

std::atomic<std::shared_ptr<const Table>> g_atomic{MakeTable()};
std::mutex g_mu;
std::shared_ptr<const Table> g_locked = MakeTable();

// What ModelRepository::Get does after the snapshot: find the model, copy the version's pointer.
std::shared_ptr<int> Find(const Table& t) {
  auto it = t.find("model_7");
  return it->second.rbegin()->second;
}

void BM_AtomicSharedPtrLoad(benchmark::State& state) {
  for (auto _ : state) {
    std::shared_ptr<const Table> t = g_atomic.load();
    benchmark::DoNotOptimize(Find(*t));
  }
}
BENCHMARK(BM_AtomicSharedPtrLoad)->Threads(1)->Threads(2);

void BM_MutexSharedPtrCopy(benchmark::State& state) {
  for (auto _ : state) {
    std::shared_ptr<const Table> t;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      t = g_locked;
    }
    benchmark::DoNotOptimize(Find(*t));
  }
}
BENCHMARK(BM_MutexSharedPtrCopy)->Threads(1)->Threads(2);

// The floor: the lookup and the version pointer copy without any snapshot.
void BM_NoSnapshot(benchmark::State& state) {
  const std::shared_ptr<const Table> t = MakeTable();
  for (auto _ : state) benchmark::DoNotOptimize(Find(*t));
}
BENCHMARK(BM_NoSnapshot)->Threads(1)->Threads(2);

}  // namespace

BENCHMARK_MAIN();
