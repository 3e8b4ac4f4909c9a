// SequenceOptions: what the sequence batcher needs from a validated `sequence_batching` section,
// read once at load: the strategy and its knobs, the control inputs (with their false/true values
// already encoded as one tensor element each), and the implicit state entries with their initial
// contents (zeros or a file under <model>/initial_state/, read and size-checked at load).
//
// Thread-safety: a plain value, immutable after FromConfig.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor/shape.h"
#include "nereid/data_type.h"
#include "nereid/status.h"

namespace inference {
class ModelConfig;
}

namespace nereid {

// START, END or READY: one element per batch row, `values[0]` when false, `values[1]` when true.
struct ControlSpec {
  std::string name;
  DataType data_type = DataType::kInvalid;  // INT32, FP32 or BOOL
  std::string values[2];                    // encoded elements (4, 4 or 1 bytes)
};

struct CorridSpec {
  std::string name;
  DataType data_type = DataType::kInvalid;  // UINT64, INT64, UINT32, INT32 or BYTES
};

struct StateSpec {
  std::string input_name;
  std::string output_name;
  DataType data_type = DataType::kInvalid;
  Shape dims;  // without the batch dimension; may hold -1
  bool has_initial = false;
  Shape initial_dims;        // fully specified when has_initial
  std::string initial_data;  // row-major (BYTES length-prefixed), when has_initial
};

struct SequenceOptions {
  enum class Strategy { kDirect, kOldest };
  Strategy strategy = Strategy::kDirect;
  int max_batch_size = 0;            // the model's (0: no batch dimension)
  uint64_t idle_ns = 1'000'000'000;  // max_sequence_idle_microseconds (Triton's 1 s when 0)
  uint64_t max_queue_delay_ns = 0;   // direct or oldest
  float minimum_slot_utilization = 0;
  size_t slots_per_instance = 1;  // direct: max(1, max_batch_size); oldest: candidate sequences
  std::vector<int64_t> preferred_batch_sizes;  // oldest
  bool preserve_ordering = false;              // oldest
  bool iterative = false;                      // iterative_sequence
  std::optional<ControlSpec> start, end, ready;
  std::optional<CorridSpec> corrid;
  std::vector<StateSpec> states;
  // Requests that may wait in the backlog (of sequences without a slot); 0: unbounded. Not from
  // the configuration: --max-sequence-backlog-size (docs/adr/0010-sequence-backlog-bound.md).
  size_t max_backlog_size = 0;
  // Test hooks, from the environment (scheduler_test_hooks.h): TRITONSERVER_DELAY_SCHEDULER and
  // TRITONSERVER_BACKLOG_DELAY_SCHEDULER.
  size_t delay_count = 0;
  size_t backlog_delay_count = 0;

  // From a validated configuration with sequence_batching; reads initial_state data files,
  // which must be relative paths that stay inside `model_dir`/initial_state.
  static StatusOr<SequenceOptions> FromConfig(const inference::ModelConfig& config,
                                              const std::filesystem::path& model_dir);
};

}  // namespace nereid
