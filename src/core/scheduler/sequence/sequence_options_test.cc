#include "core/scheduler/sequence/sequence_options.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <cstring>

#include "core/config/test_temp_dir.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

using config::testing::TempDir;

inference::ModelConfig Parse(const std::string& text) {
  inference::ModelConfig c;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &c)) << text;
  return c;
}

TEST(SequenceOptionsTest, ControlsAreEncodedPerKind) {
  TempDir dir;
  auto o = SequenceOptions::FromConfig(Parse(R"(name: "m" max_batch_size: 4 sequence_batching {
    control_input { name: "S" control { kind: CONTROL_SEQUENCE_START int32_false_true: [0, 7] } }
    control_input { name: "E" control { kind: CONTROL_SEQUENCE_END fp32_false_true: [0, 1.5] } }
    control_input { name: "R" control { kind: CONTROL_SEQUENCE_READY bool_false_true: [false, true] } }
    control_input { name: "C" control { kind: CONTROL_SEQUENCE_CORRID data_type: TYPE_STRING } }
  })"),
                                       dir.path());
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->strategy, SequenceOptions::Strategy::kDirect);
  EXPECT_EQ(o->slots_per_instance, 4u);
  EXPECT_EQ(o->idle_ns, 1'000'000'000u);
  ASSERT_TRUE(o->start && o->end && o->ready && o->corrid);
  int32_t i = 0;
  std::memcpy(&i, o->start->values[1].data(), 4);
  EXPECT_EQ(i, 7);
  float f = 0;
  std::memcpy(&f, o->end->values[1].data(), 4);
  EXPECT_EQ(f, 1.5f);
  EXPECT_EQ(o->ready->data_type, DataType::kBool);
  EXPECT_EQ(o->ready->values[0], std::string(1, '\0'));
  EXPECT_EQ(o->ready->values[1], std::string(1, '\1'));
  EXPECT_EQ(o->corrid->data_type, DataType::kBytes);
}

TEST(SequenceOptionsTest, IterativeSequenceIsRead) {
  TempDir dir;
  auto o = SequenceOptions::FromConfig(
      Parse(R"(name: "m" max_batch_size: 4 sequence_batching { iterative_sequence: true })"),
      dir.path());
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_TRUE(o->iterative);
  auto plain = SequenceOptions::FromConfig(
      Parse(R"(name: "m" max_batch_size: 4 sequence_batching { })"), dir.path());
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->iterative);
}

TEST(SequenceOptionsTest, OldestKnobs) {
  TempDir dir;
  auto o = SequenceOptions::FromConfig(Parse(R"(name: "m" max_batch_size: 8 sequence_batching {
        max_sequence_idle_microseconds: 5000
        oldest { max_candidate_sequences: 3 preferred_batch_size: [2] max_queue_delay_microseconds: 7
                 preserve_ordering: true } })"),
                                       dir.path());
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->strategy, SequenceOptions::Strategy::kOldest);
  EXPECT_EQ(o->slots_per_instance, 3u);
  EXPECT_EQ(o->idle_ns, 5'000'000u);
  EXPECT_EQ(o->max_queue_delay_ns, 7000u);
  EXPECT_TRUE(o->preserve_ordering);
  EXPECT_EQ(o->preferred_batch_sizes, std::vector<int64_t>{2});
}

constexpr char kStateHead[] = R"(name: "m" max_batch_size: 1 sequence_batching { state {
  input_name: "IN" output_name: "OUT" data_type: TYPE_INT32 dims: [-1] )";

TEST(SequenceOptionsTest, InitialStateZeroData) {
  TempDir dir;
  auto o = SequenceOptions::FromConfig(
      Parse(std::string(kStateHead) +
            R"(initial_state { data_type: TYPE_INT32 dims: [3] zero_data: true } } })"),
      dir.path());
  ASSERT_TRUE(o.ok()) << o.status().message();
  ASSERT_EQ(o->states.size(), 1u);
  EXPECT_TRUE(o->states[0].has_initial);
  EXPECT_EQ(o->states[0].initial_dims, (Shape{3}));
  EXPECT_EQ(o->states[0].initial_data, std::string(12, '\0'));
}

TEST(SequenceOptionsTest, InitialStateFromFile) {
  TempDir dir;
  const int32_t values[2] = {5, -2};
  dir.WriteFile("initial_state/init.bin",
                std::string_view(reinterpret_cast<const char*>(values), 8));
  auto o = SequenceOptions::FromConfig(
      Parse(std::string(kStateHead) +
            R"(initial_state { data_type: TYPE_INT32 dims: [2] data_file: "init.bin" } } })"),
      dir.path());
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->states[0].initial_data, std::string(reinterpret_cast<const char*>(values), 8));
}

TEST(SequenceOptionsTest, InitialStateFileErrors) {
  TempDir dir;
  dir.WriteFile("initial_state/short.bin", "abc");
  dir.WriteFile("secret.bin", "12345678");
  auto load = [&](const std::string& init) {
    return SequenceOptions::FromConfig(Parse(std::string(kStateHead) + init + " } }"), dir.path());
  };
  auto bad_size =
      load(R"(initial_state { data_type: TYPE_INT32 dims: [2] data_file: "short.bin" })");
  ASSERT_FALSE(bad_size.ok());
  EXPECT_NE(bad_size.status().message().find("holds 3 bytes, expected 8"), std::string::npos);
  auto escape =
      load(R"(initial_state { data_type: TYPE_INT32 dims: [2] data_file: "../secret.bin" })");
  ASSERT_FALSE(escape.ok());
  EXPECT_NE(escape.status().message().find("must stay within"), std::string::npos);
  auto absolute =
      load(R"(initial_state { data_type: TYPE_INT32 dims: [2] data_file: "/etc/passwd" })");
  ASSERT_FALSE(absolute.ok());
  EXPECT_NE(absolute.status().message().find("relative path"), std::string::npos);
  auto missing = load(R"(initial_state { data_type: TYPE_INT32 dims: [2] data_file: "none.bin" })");
  EXPECT_FALSE(missing.ok());
  auto variable = load(R"(initial_state { data_type: TYPE_INT32 dims: [-1] zero_data: true })");
  EXPECT_FALSE(variable.ok());
  auto type = load(R"(initial_state { data_type: TYPE_FP32 dims: [2] zero_data: true })");
  EXPECT_FALSE(type.ok());
  auto none = load(R"(initial_state { data_type: TYPE_INT32 dims: [2] })");
  EXPECT_FALSE(none.ok());
}

TEST(SequenceOptionsTest, LinkOutOfTheModelIsRefused) {
  TempDir dir;
  dir.WriteFile("outside.bin", "12345678");
  dir.WriteFile("initial_state/keep", "");
  std::filesystem::create_symlink(dir.path() / "outside.bin",
                                  dir.path() / "initial_state/link.bin");
  auto o = SequenceOptions::FromConfig(
      Parse(std::string(kStateHead) +
            R"(initial_state { data_type: TYPE_INT32 dims: [2] data_file: "link.bin" } } })"),
      dir.path());
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find("must stay within"), std::string::npos);
}

TEST(SequenceOptionsTest, DecoupledModelWithImplicitStateIsRefused) {
  auto o = SequenceOptions::FromConfig(
      Parse(R"(name: "m" max_batch_size: 0 model_transaction_policy { decoupled: true }
               sequence_batching { state { input_name: "I" output_name: "O"
                 data_type: TYPE_INT32 dims: [1] } })"),
      "/nonexistent");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().code(), StatusCode::kUnsupported);
  EXPECT_EQ(o.status().message(),
            "model 'm': implicit state (sequence_batching 'state') is not supported for models "
            "with 'decoupled' transaction policy");
  EXPECT_TRUE(SequenceOptions::FromConfig(
                  Parse(R"(name: "m" max_batch_size: 0 model_transaction_policy { decoupled: true }
                           sequence_batching { })"),
                  "/nonexistent")
                  .ok());
}

}  // namespace
}  // namespace nereid
