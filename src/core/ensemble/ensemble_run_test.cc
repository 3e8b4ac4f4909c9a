#include "core/ensemble/ensemble_run.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "core/ensemble/ensemble_test_util.h"

namespace nereid {
namespace {

using namespace ensemble_testing;

// A scalar INT64 tensor owning its value.
EnsembleTensorValue Scalar(int64_t v) {
  auto bytes = std::make_shared<int64_t>(v);
  return {DataType::kInt64,
          {1},
          std::span<const char>(reinterpret_cast<const char*>(bytes.get()), sizeof(int64_t)),
          bytes};
}
int64_t Value(const EnsembleTensorValue& t) {
  return *reinterpret_cast<const int64_t*>(t.data.data());
}

// Steps are "add<k>" (y = sum of inputs + k) or "fail"; completions are either answered at once
// or parked until the test releases them in an order it chooses.
class Harness {
 public:
  explicit Harness(const std::string& text) : config_(Parse(text)) {
    auto plan = EnsemblePlan::Build(config_);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    plan_ = std::make_unique<EnsemblePlan>(std::move(*plan));
  }

  bool deferred = false;
  std::vector<size_t> dispatched;
  std::vector<std::pair<size_t, std::function<void()>>> parked;
  std::optional<StatusOr<EnsembleResult>> result;
  std::map<size_t, const char*> input_bytes;     // step -> where its first input's bytes are
  std::map<size_t, const char*> produced_bytes;  // step -> where its output's bytes are

  void Run(std::vector<std::string> wanted = {}) {
    std::vector<size_t> w;
    if (wanted.empty()) {
      w = plan_->outputs();
    } else {
      for (const auto& name : wanted) w.push_back(plan_->FindTensor(name));
    }
    EnsembleRun::Start(
        plan_.get(), {{static_cast<size_t>(plan_->FindTensor("IN")), Scalar(1)}}, w,
        [this](size_t step, NamedTensors inputs, StepPartial, StepDone done) {
          dispatched.push_back(step);
          input_bytes[step] = inputs.front().second.data.data();
          const std::string& model = plan_->steps()[step].model_name;
          auto answer = [this, step, model, inputs, done] {
            if (model == "fail") {
              done(InvalidArgument("step failed"));
              return;
            }
            int64_t sum = std::stoll(model.substr(3));
            for (const auto& [name, t] : inputs) sum += Value(t);
            EnsembleTensorValue out = Scalar(sum);
            produced_bytes[step] = out.data.data();
            done(NamedTensors{{"y", std::move(out)}});
          };
          if (deferred) {
            parked.emplace_back(step, answer);
          } else {
            answer();
          }
        },
        [this](StatusOr<EnsembleResult> r) {
          EXPECT_FALSE(result.has_value()) << "done called twice";
          result = std::move(r);
        });
  }
  // Completes the parked step `step`.
  void Release(size_t step) {
    for (auto it = parked.begin(); it != parked.end(); ++it) {
      if (it->first == step) {
        auto f = std::move(it->second);
        parked.erase(it);
        f();
        return;
      }
    }
    ADD_FAILURE() << "step " << step << " is not parked";
  }
  const EnsemblePlan& plan() const { return *plan_; }

 private:
  inference::ModelConfig config_;
  std::unique_ptr<EnsemblePlan> plan_;
};

std::string Ensemble(const std::string& steps, const std::string& outputs = "\"OUT\"") {
  return "name: \"e\" platform: \"ensemble\" input [ { name: \"IN\" data_type: TYPE_INT64 dims: "
         "[ 1 ] } ] output [ { name: " +
         outputs + " data_type: TYPE_INT64 dims: [ 1 ] } ] ensemble_scheduling { step [ " + steps +
         " ] }";
}

TEST(EnsembleRunTest, ChainRunsInOrder) {
  Harness h(Ensemble(Step("add1", In("x", "IN") + Out("y", "t1")) + ", " +
                     Step("add10", In("x", "t1") + Out("y", "OUT"))));
  h.Run();
  ASSERT_TRUE(h.result.has_value());
  ASSERT_TRUE(h.result->ok()) << h.result->status().ToString();
  EXPECT_EQ(Value((**h.result)[0].second), 12);
  EXPECT_EQ(h.dispatched, (std::vector<size_t>{0, 1}));
}

TEST(EnsembleRunTest, LongChainCompletingInline) {
  std::string steps;
  for (int i = 0; i < 64; ++i) {
    if (i) steps += ", ";
    steps += Step("add1", In("x", i == 0 ? "IN" : "t" + std::to_string(i)) +
                              Out("y", i == 63 ? "OUT" : "t" + std::to_string(i + 1)));
  }
  Harness h(Ensemble(steps));
  h.Run();
  ASSERT_TRUE(h.result.has_value() && h.result->ok());
  EXPECT_EQ(Value((**h.result)[0].second), 65);
}

// IN -> a(+1) -> t1, IN -> b(+2) -> t2, (t1, t2) -> c(+0) -> OUT.
const std::string kDiamond = Step("add1", In("x", "IN") + Out("y", "t1")) + ", " +
                             Step("add2", In("x", "IN") + Out("y", "t2")) + ", " +
                             Step("add0", In("x0", "t1") + In("x1", "t2") + Out("y", "OUT"));

TEST(EnsembleRunTest, IndependentBranchesAreInFlightTogether) {
  Harness h(Ensemble(kDiamond));
  h.deferred = true;
  h.Run();
  // Both branches dispatched before either completed; the join waits for both.
  EXPECT_EQ(h.dispatched, (std::vector<size_t>{0, 1}));
  h.Release(1);
  EXPECT_EQ(h.dispatched.size(), 2u);
  h.Release(0);
  EXPECT_EQ(h.dispatched, (std::vector<size_t>{0, 1, 2}));
  EXPECT_FALSE(h.result.has_value());
  h.Release(2);
  ASSERT_TRUE(h.result.has_value() && h.result->ok());
  EXPECT_EQ(Value((**h.result)[0].second), 2 + 3);
}

TEST(EnsembleRunTest, FirstErrorWinsAndNothingNewStarts) {
  Harness h(Ensemble(Step("fail", In("x", "IN") + Out("y", "t1")) + ", " +
                     Step("add2", In("x", "IN") + Out("y", "t2")) + ", " +
                     Step("add0", In("x0", "t1") + In("x1", "t2") + Out("y", "OUT"))));
  h.deferred = true;
  h.Run();
  h.Release(0);  // fails while step 1 is still in flight
  EXPECT_FALSE(h.result.has_value()) << "answers only once in-flight steps drain";
  h.Release(1);
  ASSERT_TRUE(h.result.has_value());
  ASSERT_FALSE(h.result->ok());
  EXPECT_EQ(h.result->status().message(), "in ensemble 'e', step failed");
  EXPECT_EQ(h.result->status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(h.dispatched, (std::vector<size_t>{0, 1}));
}

TEST(EnsembleRunTest, OutputNeverProducedIsTheDeadlockError) {
  // Step 0 maps its output "y" but the step answers "y" only; map "z", which it never produces.
  Harness h(Ensemble(Step("add1", In("x", "IN") + Out("z", "OUT"))));
  h.Run();
  ASSERT_TRUE(h.result.has_value());
  ASSERT_FALSE(h.result->ok());
  EXPECT_EQ(h.result->status().message(),
            "in ensemble 'e', unexpected deadlock, at least one output is not set while no more "
            "ensemble steps can be made");
}

TEST(EnsembleRunTest, OnlyStepsForTheWantedOutputsRun) {
  Harness h("name: \"e\" platform: \"ensemble\" ensemble_scheduling { step [ " +
            Step("add1", In("x", "IN") + Out("y", "A")) + ", " +
            Step("add5", In("x", "IN") + Out("y", "B")) + " ] }");
  h.Run({"B"});
  ASSERT_TRUE(h.result.has_value() && h.result->ok());
  EXPECT_EQ(h.dispatched, (std::vector<size_t>{1}));
  EXPECT_EQ(Value((**h.result)[0].second), 6);
}

TEST(EnsembleRunTest, IntermediateTensorsAreSharedNotCopied) {
  // The value the second step reads is the very bytes the first step produced.
  Harness h(Ensemble(Step("add1", In("x", "IN") + Out("y", "t1")) + ", " +
                     Step("add0", In("x", "t1") + Out("y", "OUT"))));
  h.Run();
  ASSERT_TRUE(h.result.has_value() && h.result->ok());
  EXPECT_EQ(Value((**h.result)[0].second), 2);
  EXPECT_EQ(h.input_bytes.at(1), h.produced_bytes.at(0));
  EXPECT_EQ((**h.result)[0].second.data.data(), h.produced_bytes.at(1));
}

TEST(EnsembleRunTest, StepsCompletingOnOtherThreadsConcurrently) {
  // Every step answers from a thread of its own, so the two branches of the diamond complete
  // concurrently; each run still finishes exactly once with the right value.
  Harness h(Ensemble(kDiamond));
  const EnsemblePlan& plan = h.plan();
  constexpr int kRuns = 200;
  Mutex mu;
  std::vector<int64_t> results;
  std::vector<std::thread> threads;
  Mutex threads_mu;
  for (int run = 0; run < kRuns; ++run) {
    EnsembleRun::Start(
        &plan, {{static_cast<size_t>(plan.FindTensor("IN")), Scalar(run)}}, plan.outputs(),
        [&](size_t step, NamedTensors inputs, StepPartial, StepDone done) {
          const int64_t k = std::stoll(plan.steps()[step].model_name.substr(3));
          MutexLock lock(threads_mu);
          threads.emplace_back([k, inputs = std::move(inputs), done = std::move(done)] {
            int64_t sum = k;
            for (const auto& [name, t] : inputs) sum += Value(t);
            done(NamedTensors{{"y", Scalar(sum)}});
          });
        },
        [&](StatusOr<EnsembleResult> r) {
          ASSERT_TRUE(r.ok()) << r.status().ToString();
          MutexLock lock(mu);
          results.push_back(Value((*r)[0].second));
        });
  }
  // Threads start threads (the join step is dispatched from a branch's thread): join until none
  // is left.
  for (;;) {
    std::vector<std::thread> batch;
    {
      MutexLock lock(threads_mu);
      batch.swap(threads);
    }
    if (batch.empty()) break;
    for (auto& t : batch) t.join();
  }
  ASSERT_EQ(results.size(), static_cast<size_t>(kRuns));
  std::sort(results.begin(), results.end());
  for (int run = 0; run < kRuns; ++run) EXPECT_EQ(results[run], 2 * run + 3);
}

// A decoupled step "rep<n>" answers y = x + i for i < n through `partial`, then a flags-only
// FINAL; "add<k>" steps answer once. The ensemble is decoupled: each flow is one response.
struct FanOut {
  std::vector<int64_t> responses;
  std::optional<StatusOr<EnsembleResult>> final;
  std::vector<size_t> dispatched;

  void Run(const EnsemblePlan& plan, int64_t in, const std::string& fail_after = "") {
    EnsembleRun::Start(
        &plan, {{static_cast<size_t>(plan.FindTensor("IN")), Scalar(in)}}, plan.outputs(),
        [&, fail_after](size_t step, NamedTensors inputs, StepPartial partial, StepDone done) {
          dispatched.push_back(step);
          const std::string& model = plan.steps()[step].model_name;
          int64_t x = 0;
          for (const auto& [name, t] : inputs) x += Value(t);
          if (model.rfind("rep", 0) == 0) {
            const int64_t n = std::stoll(model.substr(3));
            for (int64_t i = 0; i < n; ++i) {
              if (!fail_after.empty() && i == std::stoll(fail_after)) {
                partial(Internal("simulated failure"));
                continue;
              }
              partial(NamedTensors{{"y", Scalar(x + i)}});
            }
            done(NamedTensors{});
            return;
          }
          done(NamedTensors{{"y", Scalar(x + std::stoll(model.substr(3)))}});
        },
        [&](StatusOr<EnsembleResult> r) { final = std::move(r); },
        [&](EnsembleResult r) { responses.push_back(Value(r.at(0).second)); });
  }
};

EnsemblePlan BuildPlan(const std::string& text) {
  auto config = Parse(text);
  auto plan = EnsemblePlan::Build(config);
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  return std::move(*plan);
}

TEST(EnsembleRunTest, EachResponseOfADecoupledStepRunsTheStepsAfterIt) {
  const EnsemblePlan plan = BuildPlan(Ensemble(Step("rep3", In("x", "IN") + Out("y", "t1")) + ", " +
                                               Step("add100", In("x", "t1") + Out("y", "OUT"))));
  FanOut f;
  f.Run(plan, 5);
  EXPECT_EQ(f.responses, (std::vector<int64_t>{105, 106, 107}));
  EXPECT_EQ(f.dispatched, (std::vector<size_t>{0, 1, 1, 1}));
  ASSERT_TRUE(f.final.has_value());
  ASSERT_TRUE(f.final->ok());
  EXPECT_TRUE((*f.final)->empty());  // flags-only FINAL
}

TEST(EnsembleRunTest, NoResponseFromADecoupledStepEndsWithOnlyTheFinal) {
  const EnsemblePlan plan = BuildPlan(Ensemble(Step("rep0", In("x", "IN") + Out("y", "t1")) + ", " +
                                               Step("add100", In("x", "t1") + Out("y", "OUT"))));
  FanOut f;
  f.Run(plan, 5);
  EXPECT_TRUE(f.responses.empty());
  ASSERT_TRUE(f.final.has_value() && f.final->ok());
}

TEST(EnsembleRunTest, NestedFanOutMultiplies) {
  const EnsemblePlan plan = BuildPlan(Ensemble(Step("rep2", In("x", "IN") + Out("y", "t1")) + ", " +
                                               Step("rep3", In("x", "t1") + Out("y", "OUT"))));
  FanOut f;
  f.Run(plan, 0);
  std::sort(f.responses.begin(), f.responses.end());
  EXPECT_EQ(f.responses, (std::vector<int64_t>{0, 1, 1, 2, 2, 3}));
}

TEST(EnsembleRunTest, ParallelBranchJoinsEveryFlow) {
  // rep2 and add1 both read IN; the join adds their outputs in every flow rep2 starts. Triton's
  // load-time rule refuses such an ensemble (ensemble_validation.h); the run still answers it.
  const EnsemblePlan plan =
      BuildPlan(Ensemble(Step("rep2", In("x", "IN") + Out("y", "a")) + ", " +
                         Step("add1", In("x", "IN") + Out("y", "b")) + ", " +
                         Step("add0", In("x", "a") + In("z", "b") + Out("y", "OUT"))));
  FanOut f;
  f.Run(plan, 10);
  std::sort(f.responses.begin(), f.responses.end());
  EXPECT_EQ(f.responses, (std::vector<int64_t>{21, 22}));
}

TEST(EnsembleRunTest, ErrorResponseMidStreamFailsTheRequestAfterEarlierResponses) {
  const EnsemblePlan plan = BuildPlan(Ensemble(Step("rep4", In("x", "IN") + Out("y", "t1")) + ", " +
                                               Step("add100", In("x", "t1") + Out("y", "OUT"))));
  FanOut f;
  f.Run(plan, 0, "2");
  EXPECT_EQ(f.responses, (std::vector<int64_t>{100, 101}));  // nothing after the error
  ASSERT_TRUE(f.final.has_value());
  ASSERT_FALSE(f.final->ok());
  EXPECT_EQ(f.final->status().message(), "in ensemble 'e', simulated failure");
}

TEST(EnsembleRunTest, SeveralResponsesToANonDecoupledEnsembleFail) {
  const EnsemblePlan plan = BuildPlan(Ensemble(Step("rep2", In("x", "IN") + Out("y", "OUT"))));
  std::optional<StatusOr<EnsembleResult>> final;
  EnsembleRun::Start(
      &plan, {{static_cast<size_t>(plan.FindTensor("IN")), Scalar(1)}}, plan.outputs(),
      [](size_t, NamedTensors, StepPartial partial, StepDone done) {
        partial(NamedTensors{{"y", Scalar(1)}});
        done(NamedTensors{{"y", Scalar(2)}});
      },
      [&](StatusOr<EnsembleResult> r) { final = std::move(r); });
  ASSERT_TRUE(final.has_value());
  ASSERT_FALSE(final->ok());
  EXPECT_EQ(final->status().code(), StatusCode::kInternal);
}

}  // namespace
}  // namespace nereid
