#include "core/model/instance_readiness.h"

#include <gtest/gtest.h>

#include <vector>

namespace nereid {
namespace {

class Checked final : public backend::ModelInstance {
 public:
  explicit Checked(Status answer) : answer_(std::move(answer)) {}
  Status Execute(const backend::ExecuteArgs&) override { return Status::Ok(); }
  Status CheckReady() override {
    ++asked;
    return answer_;
  }
  int asked = 0;

 private:
  Status answer_;
};

class Plain final : public backend::ModelInstance {
 public:
  Status Execute(const backend::ExecuteArgs&) override { return Status::Ok(); }
};

TEST(VersionUnavailableReason, ReadyWhenEveryCheckPasses) {
  InstanceHealth health;
  health.Add("m_0");
  health.Add("m_1");
  Checked a(Status::Ok());
  Plain b;  // a backend without a check of its own
  std::vector<backend::ModelInstance*> instances = {&a, &b};
  EXPECT_EQ(VersionUnavailableReason(health, instances), std::nullopt);
  EXPECT_EQ(a.asked, 1);
}

TEST(VersionUnavailableReason, AFailedCheckIsTheReason) {
  InstanceHealth health;
  health.Add("m_0");
  health.Add("m_1");
  Checked a(Status::Ok());
  Checked b(Unavailable("Model 'm_1' is not ready (user-defined check failed)."));
  std::vector<backend::ModelInstance*> instances = {&a, &b};
  EXPECT_EQ(VersionUnavailableReason(health, instances),
            "Model 'm_1' is not ready (user-defined check failed).");
}

TEST(VersionUnavailableReason, HealthComesFirstAndSkipsTheChecks) {
  InstanceHealth health;
  const size_t slot = health.Add("m_0");
  health.Report(slot, false, "stub process of instance 'm_0' is restarting");
  Checked a(Unavailable("not ready"));
  std::vector<backend::ModelInstance*> instances = {&a};
  EXPECT_EQ(VersionUnavailableReason(health, instances),
            "stub process of instance 'm_0' is restarting");
  EXPECT_EQ(a.asked, 0);
  health.Report(slot, true, "");
  EXPECT_EQ(VersionUnavailableReason(health, instances), "not ready");
  EXPECT_EQ(a.asked, 1);
}

}  // namespace
}  // namespace nereid
