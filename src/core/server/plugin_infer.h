// The InferFunction every backend plugin gets (backend_api.h, BackendOptions::infer): Triton's
// BLS, a model calling another model through the server. Plugins are created before the server
// exists, so the function goes through this gate, which the server attaches to once built and
// detaches from before its models are destroyed; calls outside that window get UNAVAILABLE.
//
// Thread-safety: all members may be called from any thread.
#pragma once

#include <condition_variable>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/thread_annotations.h"
#include "nereid/backend_api.h"

namespace nereid {

class InferenceServer;

class PluginInferGate : public std::enable_shared_from_this<PluginInferGate> {
 public:
  void Attach(InferenceServer* server);
  // Waits for calls being submitted (or run on the caller's thread); later calls get
  // UNAVAILABLE.
  void Detach();
  // Holds the gate alive.
  backend::InferFunction Function();
  // Readiness, load and unload for plugins (API v5); also hold the gate alive. Load blocks until
  // the load finished.
  backend::ModelControl Control();

 private:
  void Call(const backend::InferCall& call, backend::InferDone done);
  StatusOr<bool> IsReady(const std::string& name, int64_t version);
  Status Load(const std::string& name, const std::string& config_json,
              const std::vector<std::pair<std::string, std::string>>& files);
  Status Unload(const std::string& name, bool unload_dependents);

  Mutex mu_;
  InferenceServer* server_ GUARDED_BY(mu_) = nullptr;
  int calls_ GUARDED_BY(mu_) = 0;  // calls using the server outside mu_
  std::condition_variable calls_done_;
};

}  // namespace nereid
