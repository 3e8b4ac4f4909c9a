#include "perf_options.h"

#include <gtest/gtest.h>

namespace nereid::perf {
namespace {

TEST(PerfOptions, DefaultsFollowPerfAnalyzer) {
  auto o = ParsePerfOptions({"-m", "simple"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->model, "simple");
  EXPECT_EQ(o->protocol, Protocol::kHttp);
  EXPECT_EQ(o->host, "localhost");
  EXPECT_EQ(o->port, 8000);
  EXPECT_EQ(o->concurrency_start, 1);
  EXPECT_EQ(o->concurrency_end, 1);
  EXPECT_EQ(o->measurement_interval_ms, 5000);
  EXPECT_EQ(o->input_data, "zero");
  EXPECT_FALSE(o->binary);
}

TEST(PerfOptions, GrpcDefaultPortAndAllForms) {
  auto o = ParsePerfOptions({"--model-name=m", "-x", "2", "-i", "grpc", "--streaming",
                             "--concurrency-range", "1:16:4", "--measurement-interval=250", "-f",
                             "out.csv", "--shape", "INPUT0:1,16", "--shape=B:3",
                             "--input-data=random", "-s", "5", "-r", "4"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->model, "m");
  EXPECT_EQ(o->version, "2");
  EXPECT_EQ(o->protocol, Protocol::kGrpc);
  EXPECT_TRUE(o->streaming);
  EXPECT_EQ(o->port, 8001);
  EXPECT_EQ(o->concurrency_start, 1);
  EXPECT_EQ(o->concurrency_end, 16);
  EXPECT_EQ(o->concurrency_step, 4);
  EXPECT_EQ(o->measurement_interval_ms, 250);
  EXPECT_EQ(o->csv_file, "out.csv");
  EXPECT_EQ(o->shapes.at("INPUT0"), (std::vector<int64_t>{1, 16}));
  EXPECT_EQ(o->shapes.at("B"), (std::vector<int64_t>{3}));
  EXPECT_EQ(o->input_data, "random");
  EXPECT_EQ(o->stability_percentage, 5);
  EXPECT_EQ(o->max_trials, 4);
}

TEST(PerfOptions, UrlAndBinary) {
  auto o = ParsePerfOptions({"-m", "m", "-u", "127.0.0.1:9000", "--binary"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->host, "127.0.0.1");
  EXPECT_EQ(o->port, 9000);
  EXPECT_TRUE(o->binary);
  auto json = ParsePerfOptions({"-m", "m", "--input-tensor-format", "json"});
  ASSERT_TRUE(json.ok());
  EXPECT_FALSE(json->binary);
}

TEST(PerfOptions, SingleConcurrencyValue) {
  auto o = ParsePerfOptions({"-m", "m", "--concurrency-range", "8"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->concurrency_start, 8);
  EXPECT_EQ(o->concurrency_end, 8);
}

void ExpectError(std::vector<std::string> args, std::string_view text) {
  auto o = ParsePerfOptions(args);
  ASSERT_FALSE(o.ok());
  EXPECT_NE(o.status().message().find(text), std::string::npos) << o.status().message();
}

TEST(PerfOptions, BadInputIsAnError) {
  ExpectError({}, "-m (model name) is required");
  ExpectError({"-m", "m", "--bogus"}, "unknown option '--bogus'");
  ExpectError({"-m"}, "option '-m' needs a value");
  ExpectError({"-m", "m", "--binary=1"}, "takes no value");
  ExpectError({"-m", "m", "-i", "tcp"}, "expected http or grpc");
  ExpectError({"-m", "m", "--concurrency-range", "4:2"}, "end is below start");
  ExpectError({"-m", "m", "--concurrency-range", "0"}, "must be 1 to 1000000");
  ExpectError({"-m", "m", "--concurrency-range", "1:2:3:4"}, "start[:end[:step]]");
  ExpectError({"-m", "m", "--concurrency-range", "x"}, "is not an integer");
  ExpectError({"-m", "m", "--shape", "IN"}, "expected NAME:d1,d2");
  ExpectError({"-m", "m", "--shape", "IN:1,-2"}, "negative dim");
  ExpectError({"-m", "m", "-u", "h:99999"}, "expected host:port");
  ExpectError({"-m", "m", "--streaming"}, "--streaming needs -i grpc");
  ExpectError({"-m", "m", "-i", "grpc", "--binary"}, "--binary applies to -i http");
  ExpectError({"-m", "m", "-s", "0"}, "must be 1 to 100");
}

TEST(PerfOptions, RequestRateRange) {
  auto o = ParsePerfOptions(
      {"-m", "m", "--request-rate-range", "100:400.5:150", "--max-outstanding", "64"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_DOUBLE_EQ(o->rate_start, 100);
  EXPECT_DOUBLE_EQ(o->rate_end, 400.5);
  EXPECT_DOUBLE_EQ(o->rate_step, 150);
  EXPECT_EQ(o->max_outstanding, 64);
  auto one = ParsePerfOptions({"-m", "m", "--request-rate-range=50"});
  ASSERT_TRUE(one.ok());
  EXPECT_DOUBLE_EQ(one->rate_end, 50);
  ExpectError({"-m", "m", "--request-rate-range", "0"}, "must be a number above 0");
  ExpectError({"-m", "m", "--request-rate-range", "5:1"}, "end is below start");
  ExpectError({"-m", "m", "--request-rate-range", "1x"}, "must be a number above 0");
  ExpectError({"-m", "m", "-i", "grpc", "--streaming", "--request-rate-range", "5"},
              "needs unary requests");
}

TEST(PerfOptions, HelpNeedsNoModel) {
  auto o = ParsePerfOptions({"--help"});
  ASSERT_TRUE(o.ok());
  EXPECT_TRUE(o->help);
  EXPECT_NE(PerfUsage().find("--concurrency-range"), std::string::npos);
}

}  // namespace
}  // namespace nereid::perf
