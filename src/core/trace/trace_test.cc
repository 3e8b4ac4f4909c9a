#include "core/trace/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

namespace nereid::trace {
namespace {

namespace fs = std::filesystem;

std::string Read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TraceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nereid_trace_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  TraceConfig Config(uint32_t level = kLevelTimestamps) {
    TraceConfig c;
    c.level = level;
    c.rate = 1;
    c.file = (dir_ / "trace.json").string();
    return c;
  }
  fs::path dir_;
};

TEST_F(TraceTest, OffSamplesNothing) {
  auto m = TraceManager::Create(TraceConfig{});
  ASSERT_TRUE(m.ok());
  EXPECT_FALSE((*m)->MaybeEnabled());
  EXPECT_EQ((*m)->Sample("simple"), nullptr);
}

TEST_F(TraceTest, UnwritableFileAndOpenTelemetryAreStartErrors) {
  TraceConfig c = Config();
  c.file = "/nonexistent-dir/trace.json";
  EXPECT_EQ(TraceManager::Create(c).status().message(),
            "failed to open trace file '/nonexistent-dir/trace.json': No such file or directory");
  c = Config();
  c.mode = "opentelemetry";
  EXPECT_EQ(TraceManager::Create(c).status().code(), StatusCode::kInvalidArgument);
  EXPECT_FALSE(fs::exists(dir_ / "trace.json"));  // the start check leaves no file behind
}

TEST_F(TraceTest, WritesArrayAtShutdown) {
  auto m = TraceManager::Create(Config());
  ASSERT_TRUE(m.ok());
  {
    auto t = (*m)->Sample("simple");
    ASSERT_NE(t, nullptr);
    t->Start("simple", 1, "", 10);
    t->Capture("REQUEST_END", 20);
    auto child = t->SpawnChild();
    child->Start("step", 2, "rid", 15);
    EXPECT_EQ(child->parent_id(), t->id());
  }
  (*m)->Shutdown();
  const std::string text = Read(dir_ / "trace.json");
  EXPECT_EQ(text.front(), '[');
  EXPECT_EQ(text.back(), ']');
  EXPECT_NE(text.find("\"model_name\":\"simple\""), std::string::npos);
  EXPECT_NE(text.find("\"parent_id\":"), std::string::npos);
  EXPECT_NE(text.find("\"name\":\"REQUEST_END\",\"ns\":20"), std::string::npos);
}

TEST_F(TraceTest, RateCountAndLogFrequency) {
  TraceConfig c = Config();
  c.rate = 2;
  c.log_frequency = 2;
  auto m = TraceManager::Create(c);
  ASSERT_TRUE(m.ok());
  int sampled = 0;
  for (int i = 0; i < 8; ++i) {
    auto t = (*m)->Sample("");
    if (t != nullptr) {
      ++sampled;
      t->Start("m", 1, "", 1);
    }
  }
  EXPECT_EQ(sampled, 4);  // every second request
  (*m)->Flush();
  EXPECT_TRUE(fs::exists(dir_ / "trace.json.0"));
  EXPECT_TRUE(fs::exists(dir_ / "trace.json.1"));
  EXPECT_FALSE(fs::exists(dir_ / "trace.json.2"));
  EXPECT_EQ(Read(dir_ / "trace.json.0").front(), '[');

  ASSERT_TRUE(
      (*m)->Update("", {.rate = std::optional<uint32_t>(1), .count = std::optional<int32_t>(2)})
          .ok());
  EXPECT_NE((*m)->Sample(""), nullptr);
  EXPECT_EQ((*m)->Get("").count, 1);
  EXPECT_NE((*m)->Sample(""), nullptr);
  EXPECT_EQ((*m)->Sample(""), nullptr);  // the count is used up
  EXPECT_EQ((*m)->Get("").count, 0);
}

TEST_F(TraceTest, TracesWithoutRecordsKeepTheFileValid) {
  TraceConfig c = Config();
  c.log_frequency = 3;
  auto m = TraceManager::Create(c);
  ASSERT_TRUE(m.ok());
  (*m)->Sample("");  // e.g. a request refused before it reached its model: no records
  (*m)->Sample("")->Start("m", 1, "", 5);
  (*m)->Sample("");
  (*m)->Flush();
  const std::string text = Read(dir_ / "trace.json.0");
  EXPECT_EQ(text.substr(0, 7), R"([{"id":)") << text;  // no separator before the first record
  EXPECT_EQ(text.find(",,"), std::string::npos) << text;
  EXPECT_EQ(text.substr(text.size() - 2), "}]") << text;
}

TEST_F(TraceTest, ModelSettingsFallBackAndClear) {
  auto m = TraceManager::Create(Config());
  ASSERT_TRUE(m.ok());
  ASSERT_TRUE((*m)->Update("simple", {.rate = std::optional<uint32_t>(5)}).ok());
  EXPECT_EQ((*m)->Get("simple").rate, 5u);
  EXPECT_EQ((*m)->Get("other").rate, 1u);
  // A global change reaches the keys the model does not set itself.
  ASSERT_TRUE((*m)->Update("", {.log_frequency = std::optional<uint32_t>(7)}).ok());
  EXPECT_EQ((*m)->Get("simple").log_frequency, 7u);
  EXPECT_EQ((*m)->Get("simple").rate, 5u);
  // Clearing its only key drops the model's setting.
  ASSERT_TRUE((*m)->Update("simple", {.rate = std::optional<uint32_t>()}).ok());
  EXPECT_EQ((*m)->Get("simple").rate, 1u);
  // A failing update changes nothing.
  EXPECT_EQ((*m)->Update("", {.rate = std::optional<uint32_t>(0)}).message(),
            "Attempting to set invalid trace setting :sample rate must be non-zero");
  EXPECT_EQ((*m)->Get("").rate, 1u);
  // OFF with an invalid rest is allowed.
  ASSERT_TRUE((*m)->Update("", {.level = std::optional<uint32_t>(kLevelOff),
                                .rate = std::optional<uint32_t>(0)})
                  .ok());
  EXPECT_FALSE((*m)->MaybeEnabled());
  ASSERT_TRUE((*m)->Update("simple", {.level = std::optional<uint32_t>(kLevelTensors),
                                      .rate = std::optional<uint32_t>(1)})
                  .ok());
  EXPECT_TRUE((*m)->MaybeEnabled());
  EXPECT_EQ((*m)->Sample("other"), nullptr);
  EXPECT_NE((*m)->Sample("simple"), nullptr);
}

TEST_F(TraceTest, NoFileMeansTimestampsCannotBeTurnedOn) {
  auto m = TraceManager::Create(TraceConfig{});
  ASSERT_TRUE(m.ok());
  EXPECT_EQ((*m)->Update("", {.level = std::optional<uint32_t>(kLevelTimestamps)}).message(),
            "Attempting to set invalid trace setting :trace file name is not given");
}

TEST(TraceWriterTest, FullQueueDrops) {
  TraceWriter w(/*max_pending_bytes=*/4);
  const std::string path = fs::temp_directory_path() / ("nereid_tw_" + std::to_string(getpid()));
  EXPECT_FALSE(w.Post({path, "0123456789", true}));
  EXPECT_EQ(w.dropped_jobs(), 1u);
  w.Stop();
  EXPECT_FALSE(w.Post({path, "x", true}));
}

TEST(TraceWriterTest, StartsItsThreadWithTheFirstJob) {
  TraceWriter w;
  EXPECT_FALSE(w.thread_started());
  w.Flush();  // nothing posted: returns at once
  const std::string path =
      fs::temp_directory_path() / ("nereid_tw_lazy_" + std::to_string(getpid()));
  ASSERT_TRUE(w.Post({path, "{\"id\":1}", false}));
  EXPECT_TRUE(w.thread_started());
  w.Flush();
  w.Stop();
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "[{\"id\":1}]");
  fs::remove(path);
}

TEST(TraceWriterTest, StopWithoutAJobWritesNothing) {
  TraceWriter w;
  w.Stop();
  EXPECT_FALSE(w.thread_started());
  EXPECT_FALSE(w.Post({"/nonexistent/never", "x", false}));
}

}  // namespace
}  // namespace nereid::trace
