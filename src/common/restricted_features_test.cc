#include "common/restricted_features.h"

#include <gtest/gtest.h>

namespace nereid {
namespace {

Status ParseApi(std::string_view arg, RestrictedFeatures* f) {
  return ParseRestrictedFeatureOption(arg, "http-restricted-api", "", "api", f);
}

TEST(RestrictedFeaturesTest, ParsesGroupsOfCategories) {
  RestrictedFeatures f;
  EXPECT_TRUE(f.empty());
  ASSERT_TRUE(ParseApi("health,metadata:admin-key=secret", &f).ok());
  ASSERT_TRUE(ParseApi("model-repository:repo=a=b", &f).ok());
  EXPECT_FALSE(f.empty());
  ASSERT_NE(f.Get(RestrictedCategory::kHealth), nullptr);
  EXPECT_EQ(f.Get(RestrictedCategory::kHealth)->key, "admin-key");
  EXPECT_EQ(f.Get(RestrictedCategory::kMetadata)->value, "secret");
  EXPECT_EQ(f.Get(RestrictedCategory::kModelRepository)->key, "repo");
  EXPECT_EQ(f.Get(RestrictedCategory::kModelRepository)->value, "a=b");  // first '=' splits
  EXPECT_FALSE(f.IsRestricted(RestrictedCategory::kInference));
  EXPECT_EQ(f.Get(RestrictedCategory::kInference), nullptr);
}

TEST(RestrictedFeaturesTest, GrpcKeysGetThePrefix) {
  RestrictedFeatures f;
  ASSERT_TRUE(ParseRestrictedFeatureOption("inference:k=v", "grpc-restricted-protocol",
                                           kRestrictedProtocolHeaderPrefix, "protocol", &f)
                  .ok());
  EXPECT_EQ(f.Get(RestrictedCategory::kInference)->key, "triton-grpc-protocol-k");
}

TEST(RestrictedFeaturesTest, TritonsErrors) {
  RestrictedFeatures f;
  for (const char* bad : {"health", "health:k", ":k=v", "health:=v", "health:k=", "k=v:health"}) {
    Status s = ParseApi(bad, &f);
    EXPECT_EQ(s.message(), std::string("--http-restricted-api option format is "
                                       "'<config name>:<setting>=<value>'. Got ") +
                               bad)
        << bad;
  }
  EXPECT_EQ(ParseApi("health,X:k=v", &f).message(), "unknown restricted api 'X'");
  EXPECT_EQ(ParseApi("Health:k=v", &f).message(), "unknown restricted api 'Health'");
  RestrictedFeatures e;
  EXPECT_EQ(ParseApi("health,:k=v", &e).message(), "unknown restricted api ''");
  EXPECT_EQ(ParseRestrictedFeatureOption("nope:k=v", "grpc-restricted-protocol", "", "protocol", &f)
                .message(),
            "unknown restricted protocol 'nope'");
  RestrictedFeatures g;
  ASSERT_TRUE(ParseApi("health:k=v", &g).ok());
  EXPECT_EQ(ParseApi("metadata,health:k2=v", &g).message(),
            "restricted api 'health' can not be specified in multiple config groups");
  EXPECT_EQ(ParseApi("trace,trace:k3=v", &g).message(),
            "restricted api 'trace' can not be specified in multiple config groups");
}

}  // namespace
}  // namespace nereid
