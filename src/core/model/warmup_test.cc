#include "core/model/warmup.h"

#include <gtest/gtest.h>

#include "core/config/test_temp_dir.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

inference::ModelConfig ConfigWith(const std::string& data_choice, const std::string& file = "") {
  inference::ModelConfig config;
  config.set_name("m");
  config.set_max_batch_size(4);
  auto* w = config.add_model_warmup();
  w->set_name("sample");
  w->set_batch_size(3);
  w->set_count(2);
  auto& in = (*w->mutable_inputs())["IN"];
  in.set_data_type(inference::TYPE_INT32);
  in.add_dims(2);
  if (data_choice == "zero") in.set_zero_data(true);
  if (data_choice == "random") in.set_random_data(true);
  if (data_choice == "file") in.set_input_data_file(file);
  return config;
}

TEST(WarmupTest, ZeroAndRandomDataCoverTheBatch) {
  config::testing::TempDir t;
  auto zero = BuildWarmupSamples(ConfigWith("zero"), t.path());
  ASSERT_TRUE(zero.ok()) << zero.status().message();
  ASSERT_EQ(zero->size(), 1u);
  const WarmupInput& in = (*zero)[0].inputs[0];
  EXPECT_EQ(in.shape, (Shape{3, 2}));
  EXPECT_EQ(*in.data, std::string(24, '\0'));
  EXPECT_EQ((*zero)[0].count, 2);
  auto random = BuildWarmupSamples(ConfigWith("random"), t.path());
  ASSERT_TRUE(random.ok());
  EXPECT_EQ((*random)[0].inputs[0].data->size(), 24u);
}

TEST(WarmupTest, FileDataMustHoldExactlyOneItem) {
  config::testing::TempDir t;
  t.WriteFile("warmup/ok.bin", std::string(8, '\1'));
  t.WriteFile("warmup/short.bin", std::string(7, '\1'));
  auto ok = BuildWarmupSamples(ConfigWith("file", "ok.bin"), t.path());
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ(*(*ok)[0].inputs[0].data, std::string(24, '\1'));
  auto bad = BuildWarmupSamples(ConfigWith("file", "short.bin"), t.path());
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("warmup sample 'sample' input 'IN': warmup setting "
                                        "expects 8 bytes, but the data provided from "
                                        "'short.bin' has 7 bytes"),
            std::string::npos)
      << bad.status().message();
  EXPECT_FALSE(BuildWarmupSamples(ConfigWith("file", "missing.bin"), t.path()).ok());
  t.WriteFile("outside.bin", std::string(8, '\1'));
  std::filesystem::create_symlink(t.path() / "outside.bin", t.path() / "warmup/link.bin");
  auto escaped = BuildWarmupSamples(ConfigWith("file", "link.bin"), t.path());
  ASSERT_FALSE(escaped.ok());
  EXPECT_NE(escaped.status().message().find("must stay inside"), std::string::npos);
}

TEST(WarmupTest, StringInputsAreEmptyStringsOrCountedFromTheFile) {
  config::testing::TempDir t;
  auto config = ConfigWith("zero");
  auto& in = (*config.mutable_model_warmup(0)->mutable_inputs())["IN"];
  in.set_data_type(inference::TYPE_STRING);
  auto zero = BuildWarmupSamples(config, t.path());
  ASSERT_TRUE(zero.ok()) << zero.status().message();
  EXPECT_EQ(*(*zero)[0].inputs[0].data, std::string(3 * 2 * 4, '\0'));  // 6 empty strings
  const std::string two("\x01\0\0\0a\x02\0\0\0bc", 11);
  t.WriteFile("warmup/s.bin", two);
  in.set_input_data_file("s.bin");
  auto file = BuildWarmupSamples(config, t.path());
  ASSERT_TRUE(file.ok()) << file.status().message();
  EXPECT_EQ(*(*file)[0].inputs[0].data, two + two + two);
  t.WriteFile("warmup/s.bin", two.substr(0, 5));  // one element where the dims need two
  EXPECT_FALSE(BuildWarmupSamples(config, t.path()).ok());
}

TEST(WarmupTest, OversizedInputsAreRefusedBeforeAllocation) {
  config::testing::TempDir t;
  auto config = ConfigWith("zero");
  auto& in = (*config.mutable_model_warmup(0)->mutable_inputs())["IN"];
  in.clear_dims();
  in.add_dims(1LL << 40);
  auto s = BuildWarmupSamples(config, t.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("larger than the warmup limit"), std::string::npos);
}

}  // namespace
}  // namespace nereid
