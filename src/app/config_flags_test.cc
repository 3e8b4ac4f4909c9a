// Triton's checks of its "<name>,<setting>=<value>"-style and compatibility flags, with its texts.
#include "app/config_flags.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

using Compat = std::map<std::string, std::vector<std::string>>;

TEST(ConfigFlagsTest, BackendConfig) {
  auto global = ParseBackendConfigOption("default-max-batch-size=8");
  ASSERT_TRUE(global.ok());
  EXPECT_EQ(global->first, "");
  EXPECT_EQ(global->second.first, "default-max-batch-size");
  auto named = ParseBackendConfigOption("python,shm-default-byte-size=1,2=3");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->first, "python");
  EXPECT_EQ(named->second.second, "1,2=3");
  EXPECT_EQ(ParseBackendConfigOption(",a=b").status().message(),
            "No backend specified. --backend-config option format is <backend name>,<setting>="
            "<value> or <setting>=<value>. Got ,a=b");
  for (const char* bad : {"novalue", "onnx,", "onnx,=1", "onnx,a=", "=1"}) {
    EXPECT_EQ(ParseBackendConfigOption(bad).status().message(),
              std::string("--backend-config option format is '<backend name>,<setting>=<value>'. "
                          "Got ") +
                  bad);
  }
}

TEST(ConfigFlagsTest, CacheConfig) {
  auto ok = ParseCacheConfigOption("local,size=1048576");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->first, "local");
  EXPECT_EQ(ok->second.second, "1048576");
  for (const char* bad : {"size=1", ",size=1"}) {
    EXPECT_EQ(ParseCacheConfigOption(bad).status().message(),
              std::string("No cache specified. --cache-config option format is <cache name>,"
                          "<setting>=<value>. Got ") +
                  bad);
  }
  EXPECT_EQ(ParseCacheConfigOption("local,size").status().message(),
            "--cache-config option format is '<cache name>,<setting>=<value>'. Got local,size");
  EXPECT_TRUE(CheckCompatFlags({{"--cache-config", {"local,size=1", "local,other=2"}}}).ok());
  EXPECT_EQ(CheckCompatFlags({{"--cache-config", {"local,size=1", "redis,host=h"}}}).message(),
            "found multiple cache configurations, but only a single cache is currently supported");
  EXPECT_EQ(CheckCompatFlags(
                {{"--cache-config", {"local,size=1"}}, {"--response-cache-byte-size", {"10"}}})
                .message(),
            "Error: Incompatible flags --response-cache-byte-size and --cache-config both "
            "provided. Please provide one or the other.");
  EXPECT_EQ(CheckCompatFlags({{"--cache-config", {"size=1"}}}).message(),
            "Bad option: \"--cache-config\". No cache specified. --cache-config option format is "
            "<cache name>,<setting>=<value>. Got size=1");
}

TEST(ConfigFlagsTest, TraceConfig) {
  EXPECT_TRUE(CheckTraceConfig({"level=TIMESTAMPS", "level=tensors", "rate=100", "count=-1",
                                "triton,file=/tmp/t.json", "triton,log-frequency=50",
                                "opentelemetry,url=localhost:4318", "mode=opentelemetry"})
                  .ok());
  EXPECT_EQ(CheckTraceConfig({"foo,rate=1"}).message(),
            "Bad option: \"--trace-config\". invalid value for trace mode option: foo. Available "
            "options are \"triton\" and \"opentelemetry\"");
  EXPECT_EQ(CheckTraceConfig({",rate=1"}).message(),
            "Bad option: \"--trace-config\". No trace mode specified. --trace-config option "
            "format is <trace mode>,<setting>=<value> or <setting>=<value>. Got ,rate=1");
  EXPECT_EQ(CheckTraceConfig({"rate"}).message(),
            "Bad option: \"--trace-config\". --trace-config option format is '<trace mode>,"
            "<setting>=<value>'. Got rate");
  EXPECT_EQ(CheckTraceConfig({"level=loud"}).message(),
            "Bad option: \"--trace-config level\". invalid value for trace level option: loud");
  EXPECT_EQ(CheckTraceConfig({"rate=often"}).message(),
            "Bad option: \"--trace-config rate\". Invalid option value. Got often");
  EXPECT_EQ(CheckTraceConfig({"triton,log-frequency=x"}).message(),
            "Bad option: \"--trace-config triton,log-frequency\". Invalid option value. Got x");
}

TEST(ConfigFlagsTest, OtherCompatFlags) {
  EXPECT_TRUE(CheckCompatFlags({{"--host-policy", {"gpu_0,numa-node=0", "cpu,cpu-cores=0-3"}},
                                {"--rate-limit-resource", {"R1:10", "R2:5:0"}},
                                {"--rate-limit", {"EXECUTION_COUNT"}},
                                {"--cuda-memory-pool-byte-size", {"0:1024", "1:2048"}},
                                {"--model-load-gpu-limit", {"0:0.5"}},
                                {"--grpc-max-response-pool-size", {"4"}},
                                {"--model-namespacing", {"ON"}}})
                  .ok());
  EXPECT_EQ(CheckCompatFlags({{"--host-policy", {"numa-node=0"}}}).message(),
            "Bad option: \"--host-policy\". --host-policy option format is '<policy name>,"
            "<setting>=<value>'. Got numa-node=0");
  EXPECT_EQ(CheckCompatFlags({{"--rate-limit-resource", {"R1"}}}).message(),
            "Bad option: \"--rate-limit-resource\". --rate-limit-resource option format is "
            "'<resource_name>:<count>:<device>' or '<resource_name>:<count>'. Got R1");
  EXPECT_EQ(CheckCompatFlags({{"--rate-limit-resource", {"R1:x"}}}).message(),
            "Bad option: \"--rate-limit-resource\". Invalid option value. Got x");
  EXPECT_EQ(CheckCompatFlags({{"--rate-limit", {"sometimes"}}}).message(),
            "Bad option: \"--rate-limit\". invalid argument for --rate-limit");
  EXPECT_EQ(CheckCompatFlags({{"--cuda-memory-pool-byte-size", {"1024"}}}).message(),
            "Bad option: \"--cuda-memory-pool-byte-size\". Cannot parse pair option due to "
            "incorrect number of inputs.--<pair option> argument requires format "
            "<first>:<second>. Found: 1024");
  EXPECT_TRUE(CheckCompatFlags({{"--sagemaker-safe-port-range", {"8080-8090"}}}).ok());
  EXPECT_EQ(CheckCompatFlags({{"--sagemaker-safe-port-range", {"8080:8090"}}}).message(),
            "Bad option: \"--sagemaker-safe-port-range\". Cannot parse pair option due to "
            "incorrect number of inputs.--<pair option> argument requires format "
            "<first>-<second>. Found: 8080:8090");
  EXPECT_EQ(CheckCompatFlags({{"--grpc-max-response-pool-size", {"0"}}}).message(),
            "Bad option: \"--grpc-max-response-pool-size\". Error: --grpc-max-response-pool-size "
            "must be greater than 0.");
  EXPECT_EQ(CheckCompatFlags({{"--model-namespacing", {"maybe"}}}).message(),
            "Bad option: \"--model-namespacing\". invalid value for bool option: maybe");
  EXPECT_EQ(
      CheckCompatFlags({{"--pinned-memory-pool-byte-size", {"99999999999999999999"}}}).message(),
      "Bad option: \"--pinned-memory-pool-byte-size\". Provided option value is out of "
      "bound. Got 99999999999999999999");
}

TEST(ConfigFlagsTest, TritonIntegersAreStoiLenient) {
  EXPECT_EQ(*ParseTritonInteger(" 12abc", 0, 100), 12);
  EXPECT_EQ(ParseTritonInteger("abc", 0, 100).status().message(), "Invalid option value. Got abc");
  EXPECT_EQ(ParseTritonInteger("3000000000", INT32_MIN, INT32_MAX).status().message(),
            "Provided option value is out of bound. Got 3000000000");
}

}  // namespace
}  // namespace nereid
