// ModelRepository and RepositoryPoller against the real identity backend plugin (copied alone
// into a private backend directory): lifecycle states, reload swaps, failed reloads, version
// policy, overrides, and the POLL stability rule scan by scan (no timers involved).
#include "core/repository/model_repository.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "core/config/test_temp_dir.h"
#include "core/repository/repository_poller.h"

namespace nereid {
namespace {

using config::testing::TempDir;

std::string IdentityConfig(const std::string& name, int max_batch = 8,
                           const std::string& extra = "") {
  return "name: \"" + name +
         "\"\nbackend: \"identity\"\nmax_batch_size: " + std::to_string(max_batch) +
         "\ninput [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ -1 ] } ]\n"
         "output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ -1 ] } ]\n" +
         extra;
}

// Threads of this process.
size_t ThreadCount() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& t : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

std::unique_ptr<InferenceRequest> TwoFloats(const std::string& model) {
  auto r = std::make_unique<InferenceRequest>();
  r->model_name = model;
  auto data = std::make_shared<const std::string>(8, '\0');
  InferInput in;
  in.name = "INPUT0";
  in.data_type = DataType::kFp32;
  in.shape = {1, 2};
  in.data = std::span<const char>(data->data(), data->size());
  r->inputs.push_back(std::move(in));
  r->KeepAlive(data);
  return r;
}

constexpr char kSlow[] =
    "parameters { key: \"execute_delay_ms\" value { string_value: \"300\" } }\n";

class RepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::copy_file(
        std::filesystem::path(NEREID_TEST_BACKEND_DIR) / "libnereid_identity.so",
        backends_.path() / "libnereid_identity.so");
    auto registry = BackendRegistry::Create({backends_.path(), {}});
    ASSERT_TRUE(registry.ok()) << registry.status().message();
    registry_ = std::move(registry).value();
    ModelRepository::Options o;
    o.roots = {models_.path()};
    o.registry = registry_.get();
    auto repo = ModelRepository::Create(o);
    ASSERT_TRUE(repo.ok()) << repo.status().message();
    repo_ = std::move(repo).value();
  }
  void TearDown() override { repo_.reset(); }

  void WriteModel(const std::string& name, const std::string& config,
                  std::initializer_list<int> versions = {1}) {
    models_.WriteFile(name + "/config.pbtxt", config);
    for (int v : versions) models_.WriteFile(name + "/" + std::to_string(v) + "/.keep", "");
  }
  std::vector<VersionStatus> States(const std::string& name) {
    for (auto& m : repo_->Index()) {
      if (m.name == name) return m.versions;
    }
    return {};
  }

  TempDir backends_;
  TempDir models_;
  std::unique_ptr<BackendRegistry> registry_;
  std::unique_ptr<ModelRepository> repo_;
};

TEST_F(RepositoryTest, UnloadKeepsInFlightVersionsUntilReleased) {
  WriteModel("m", IdentityConfig("m"));
  ASSERT_TRUE(repo_->Load("m", {}).ok());
  auto held = repo_->Get("m", -1);
  ASSERT_TRUE(held.ok());
  ASSERT_TRUE(repo_->Unload("m").ok());
  EXPECT_EQ(repo_->Get("m", -1).status().code(), StatusCode::kUnavailable);
  ASSERT_EQ(States("m").size(), 1u);
  EXPECT_EQ(States("m")[0].state, ModelState::kUnloading);
  EXPECT_EQ((*held)->version(), 1);  // still usable
  held = Status(StatusCode::kCancelled, "released");
  EXPECT_EQ(States("m")[0].state, ModelState::kUnavailable);
  EXPECT_EQ(States("m")[0].reason, "unloaded");
  EXPECT_TRUE(repo_->AllReady());
}

// The last reference of an unloaded version drops on its own executor thread (the request that
// held it finishes there): the version moves to UNLOADED at that moment and is destroyed by the
// reaper (destroying it on that thread would join the thread itself, and aborts).
TEST_F(RepositoryTest, AVersionReleasedOnItsOwnExecutorIsUnloadedThere) {
  WriteModel("slow", IdentityConfig("slow", 8, kSlow));
  ASSERT_TRUE(repo_->Load("slow", {}).ok());
  std::atomic<bool> answered{false};
  {
    auto version = repo_->Get("slow", -1);
    ASSERT_TRUE(version.ok());
    ModelVersion::Infer(
        *version, TwoFloats("slow"),
        [&answered](StatusOr<std::unique_ptr<InferenceResponse>> r) {
          EXPECT_TRUE(r.ok()) << r.status().message();
          answered = true;
        },
        /*allow_inline=*/false);
  }
  ASSERT_TRUE(repo_->Unload("slow").ok());
  EXPECT_EQ(States("slow")[0].state, ModelState::kUnloading);  // the request still holds it
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (States("slow")[0].state == ModelState::kUnloading &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(answered);
  EXPECT_EQ(States("slow")[0].state, ModelState::kUnavailable);
  EXPECT_EQ(States("slow")[0].reason, "unloaded");
}

// Issue 14 item 2: the repository is destroyed while a request still runs on an unloaded
// version. The version's last reference then drops on its own executor thread after shutdown
// began; the reaper still destroys it (it used to be deleted on a detached thread), and the
// repository's destructor returns only once it has, leaving no thread behind.
TEST_F(RepositoryTest, DestroyingTheRepositoryWaitsForTheReaperToDestroyVersionsStillInUse) {
  WriteModel("slow", IdentityConfig("slow", 8, kSlow));
  // No Nereid thread yet: the reaper starts with the first version it has to destroy. A thread
  // started and joined first puts TSan's own background thread (spawned with the process's
  // first pthread_create) into the baseline.
  std::thread([] {}).join();
  const size_t threads_without_models = ThreadCount();
  ASSERT_TRUE(repo_->Load("slow", {}).ok());
  std::atomic<bool> answered{false};
  {
    auto version = repo_->Get("slow", -1);
    ASSERT_TRUE(version.ok());
    ModelVersion::Infer(
        *version, TwoFloats("slow"),
        [&answered](StatusOr<std::unique_ptr<InferenceResponse>> r) {
          EXPECT_TRUE(r.ok()) << r.status().message();
          answered = true;
        },
        /*allow_inline=*/false);
  }
  EXPECT_GT(ThreadCount(), threads_without_models);  // the model's executor
  repo_.reset();
  EXPECT_TRUE(answered);
  EXPECT_EQ(ThreadCount(), threads_without_models);  // no executor, no reaper, nothing else
}

TEST_F(RepositoryTest, ReloadSwapsAndFailedReloadKeepsTheOldVersion) {
  WriteModel("m", IdentityConfig("m"));
  ASSERT_TRUE(repo_->Load("m", {}).ok());
  auto first = *repo_->Get("m", -1);
  ASSERT_TRUE(repo_->Load("m", {}).ok());
  auto second = *repo_->Get("m", -1);
  EXPECT_NE(first.get(), second.get());
  EXPECT_EQ(first->version(), 1);
  models_.WriteFile("m/config.pbtxt", IdentityConfig("m", -1));
  Status s = repo_->Load("m", {});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("load failed for model 'm'"), std::string::npos) << s.message();
  EXPECT_EQ(repo_->Get("m", -1)->get(), second.get());
  EXPECT_EQ(States("m")[0].state, ModelState::kReady);
}

// A version whose backend load fails: Triton's "version <v> is at UNAVAILABLE state: <Code>: ...;".
TEST_F(RepositoryTest, FailedVersionIsReportedInTritonsWords) {
  WriteModel("m", IdentityConfig("m", 8,
                                 "output [ { name: \"OUTPUT1\" data_type: TYPE_FP32 "
                                 "dims: [ -1 ] } ]\n"));
  Status s = repo_->Load("m", {});
  ASSERT_EQ(s.code(), StatusCode::kInvalidArgument);
  const std::string prefix =
      "load failed for model 'm': version 1 is at UNAVAILABLE state: Invalid argument: ";
  EXPECT_EQ(s.message().substr(0, prefix.size()), prefix) << s.message();
  EXPECT_NE(s.message().find("as many inputs as outputs"), std::string::npos) << s.message();
  EXPECT_EQ(s.message().back(), ';') << s.message();
}

TEST_F(RepositoryTest, FailedLoadsAreKeptInTheRecentLoadErrors) {
  EXPECT_TRUE(repo_->RecentLoadErrors().empty());
  WriteModel("good", IdentityConfig("good"));
  ASSERT_TRUE(repo_->Load("good", {}).ok());
  EXPECT_TRUE(repo_->RecentLoadErrors().empty());
  Status missing = repo_->Load("absent", {});
  ASSERT_FALSE(missing.ok());
  WriteModel("m", IdentityConfig("m", 8,
                                 "output [ { name: \"OUTPUT1\" data_type: TYPE_FP32 "
                                 "dims: [ -1 ] } ]\n"));
  Status bad = repo_->Load("m", {});
  ASSERT_FALSE(bad.ok());
  const std::vector<LoadError> errors = repo_->RecentLoadErrors();
  ASSERT_EQ(errors.size(), 2u);
  EXPECT_EQ(errors[0].model, "absent");
  EXPECT_EQ(errors[0].reason, missing.message());
  EXPECT_EQ(errors[1].model, "m");
  EXPECT_EQ(errors[1].reason, bad.message());
  EXPECT_LE(errors[0].time, errors[1].time);
}

TEST_F(RepositoryTest, LoadReevaluatesTheVersionPolicy) {
  WriteModel("m", IdentityConfig("m"));
  ASSERT_TRUE(repo_->Load("m", {}).ok());
  models_.WriteFile("m/2/.keep", "");
  ASSERT_TRUE(repo_->Load("m", {}).ok());
  EXPECT_EQ((*repo_->Get("m", -1))->version(), 2);
  EXPECT_FALSE(repo_->Get("m", 1).ok());
  auto states = States("m");
  ASSERT_EQ(states.size(), 2u);
  EXPECT_EQ(states[0].reason, "unloaded");
  EXPECT_EQ(states[1].state, ModelState::kReady);
}

TEST_F(RepositoryTest, UnknownInvalidAndOverrides) {
  EXPECT_EQ(repo_->Load("nope", {}).message(),
            "failed to load 'nope', failed to poll from model repository");
  EXPECT_EQ(repo_->Load("../m", {}).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(repo_->Get("a/b", -1).status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(repo_->Unload("nope").ok());
  ModelLoadParameters files_only;
  files_only.files = {{"1/.keep", ""}};
  EXPECT_EQ(repo_->Load("up", files_only).message(),
            "failed to load 'up', Load parameter 'config' must be specified for model file "
            "override");
  ModelLoadParameters p;
  p.config_json = R"({"backend":"identity","max_batch_size":2,
      "input":[{"name":"INPUT0","data_type":"TYPE_FP32","dims":[-1]}],
      "output":[{"name":"OUTPUT0","data_type":"TYPE_FP32","dims":[-1]}]})";
  p.files = {{"1/.keep", ""}};
  ASSERT_TRUE(repo_->Load("up", p).ok());
  EXPECT_EQ((*repo_->Get("up", -1))->info().max_batch_size, 2);
  EXPECT_EQ((*repo_->Get("up", -1))->info().name, "up");
  ModelLoadParameters bad;
  bad.config_json = "{nope";
  EXPECT_EQ(
      repo_->Load("up", bad).message().rfind("failed to load 'up', Invalid config override", 0),
      0u);
  ModelLoadParameters escape;
  escape.config_json = p.config_json;
  escape.files = {{"../x", ""}};
  EXPECT_EQ(
      repo_->Load("up", escape).message().rfind("failed to load 'up', invalid load parameter", 0),
      0u);
}

TEST_F(RepositoryTest, PollerActsOnlyOnDirectoriesStableAcrossTwoScans) {
  RepositoryPoller poller(repo_.get(), {0, 1});
  poller.Prime();
  WriteModel("p", IdentityConfig("p", 8, "version_policy: { all { } }\n"));
  poller.ScanOnce();  // first sight: not acted on
  EXPECT_TRUE(States("p").empty());
  EXPECT_FALSE(repo_->Get("p", -1).ok());
  poller.ScanOnce();  // unchanged since the last scan: loaded
  auto v1 = repo_->Get("p", 1);
  ASSERT_TRUE(v1.ok());

  models_.WriteFile("p/2/.keep", "");  // a new version: only it loads, version 1 is kept
  poller.ScanOnce();
  EXPECT_FALSE(repo_->Get("p", 2).ok());
  poller.ScanOnce();
  EXPECT_TRUE(repo_->Get("p", 2).ok());
  EXPECT_EQ(repo_->Get("p", 1)->get(), v1->get());

  models_.WriteFile("p/config.pbtxt", IdentityConfig("p", 4, "version_policy: { all { } }\n"));
  poller.ScanOnce();
  EXPECT_EQ((*repo_->Get("p", -1))->info().max_batch_size, 8);
  poller.ScanOnce();
  EXPECT_EQ((*repo_->Get("p", -1))->info().max_batch_size, 4);
  EXPECT_NE(repo_->Get("p", 1)->get(), v1->get());  // a config change reloads every version

  std::filesystem::remove_all(models_.path() / "p");
  poller.ScanOnce();
  EXPECT_TRUE(repo_->Get("p", -1).ok());
  poller.ScanOnce();
  EXPECT_EQ(repo_->Get("p", -1).status().code(), StatusCode::kNotFound);
}

TEST_F(RepositoryTest, PollerRetriesAFailedModelOnlyWhenItChanges) {
  RepositoryPoller poller(repo_.get(), {0, 1});
  poller.Prime();
  WriteModel("f", IdentityConfig("f", -2));
  poller.ScanOnce();
  poller.ScanOnce();
  ASSERT_FALSE(States("f").empty());
  EXPECT_EQ(States("f")[0].state, ModelState::kUnavailable);
  models_.WriteFile("f/config.pbtxt", IdentityConfig("f"));
  poller.ScanOnce();
  EXPECT_FALSE(repo_->Get("f", -1).ok());
  poller.ScanOnce();
  EXPECT_TRUE(repo_->Get("f", -1).ok());
}

TEST_F(RepositoryTest, PollerCallsAfterLoadsOnlyAfterAScanThatLoaded) {
  int calls = 0;
  RepositoryPoller::Options options{0, 1};
  options.after_loads = [&calls] { ++calls; };
  RepositoryPoller poller(repo_.get(), options);
  poller.Prime();
  poller.ScanOnce();  // nothing changed
  EXPECT_EQ(calls, 0);
  WriteModel("a", IdentityConfig("a"));
  poller.ScanOnce();  // first sight: not loaded yet
  EXPECT_EQ(calls, 0);
  poller.ScanOnce();  // loaded
  EXPECT_TRUE(repo_->Get("a", -1).ok());
  EXPECT_EQ(calls, 1);
  poller.ScanOnce();  // unchanged since
  EXPECT_EQ(calls, 1);
}

// Issue 15: ensembles in the repository (ensemble_loading.cc).
std::string EnsembleConfig(const std::string& name, const std::string& step_model) {
  return "name: \"" + name +
         "\"\nplatform: \"ensemble\"\nmax_batch_size: 8\n"
         "input [ { name: \"INPUT0\" data_type: TYPE_FP32 dims: [ -1 ] } ]\n"
         "output [ { name: \"OUTPUT0\" data_type: TYPE_FP32 dims: [ -1 ] } ]\n"
         "ensemble_scheduling { step [ { model_name: \"" +
         step_model +
         "\" model_version: -1 input_map { key: \"INPUT0\" value: \"INPUT0\" } "
         "output_map { key: \"OUTPUT0\" value: \"OUTPUT0\" } } ] }\n";
}

TEST_F(RepositoryTest, EnsembleLoadBringsItsComposingModelAndUnloadDependentsTakesItAway) {
  WriteModel("a", IdentityConfig("a"));
  WriteModel("e", EnsembleConfig("e", "a"));
  WriteModel("b", IdentityConfig("b"));
  WriteModel("e2", EnsembleConfig("e2", "b"));
  ASSERT_TRUE(repo_->Load("b", {}).ok());  // by name: never a dependent to unload
  ASSERT_TRUE(repo_->Load("e", {}).ok());
  ASSERT_TRUE(repo_->Load("e2", {}).ok());
  ASSERT_TRUE(repo_->Get("a", -1).ok());
  auto e = repo_->Get("e", -1);
  ASSERT_TRUE(e.ok());
  std::atomic<bool> answered{false};
  ModelVersion::Infer(
      *e, TwoFloats("e"),
      [&answered](StatusOr<std::unique_ptr<InferenceResponse>> r) {
        ASSERT_TRUE(r.ok()) << r.status().message();
        EXPECT_EQ((*r)->model_name, "e");
        ASSERT_EQ((*r)->outputs.size(), 1u);
        EXPECT_EQ((*r)->outputs[0].name, "OUTPUT0");
        EXPECT_EQ((*r)->outputs[0].data, std::string(8, '\0'));
        answered = true;
      },
      /*allow_inline=*/false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!answered && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  EXPECT_TRUE(answered);
  e = Status(StatusCode::kCancelled, "released");
  ASSERT_TRUE(repo_->Unload("e", /*unload_dependents=*/true).ok());
  ASSERT_TRUE(repo_->Unload("e2", /*unload_dependents=*/true).ok());
  EXPECT_FALSE(repo_->Get("a", -1).ok());
  EXPECT_TRUE(repo_->Get("b", -1).ok());
}

TEST_F(RepositoryTest, EnsembleThatContainsItselfIsACircularDependency) {
  WriteModel("self", EnsembleConfig("self", "self"));
  Status s = repo_->Load("self", {});
  EXPECT_EQ(s.message(),
            "load failed for model 'self': circular dependency between ensembles: self -> self");
  ASSERT_EQ(States("self").size(), 1u);
  EXPECT_EQ(States("self")[0].state, ModelState::kUnavailable);
  WriteModel("a", IdentityConfig("a"));
  EXPECT_TRUE(repo_->Load("a", {}).ok());  // nothing else is affected
}

TEST_F(RepositoryTest, EnsembleOverAMissingModelNamesIt) {
  WriteModel("e", EnsembleConfig("e", "nowhere"));
  EXPECT_EQ(repo_->Load("e", {}).message(),
            "load failed for model 'e': ensemble e contains models that are not available or "
            "ambiguous: nowhere");
}

}  // namespace
}  // namespace nereid
