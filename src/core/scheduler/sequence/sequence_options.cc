#include "core/scheduler/sequence/sequence_options.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <system_error>

#include "common/saturating_time.h"
#include "model_config.pb.h"

namespace nereid {
namespace {

using Control = inference::ModelSequenceBatching::Control;

template <typename T>
std::string Element(T value) {
  std::string out(sizeof(T), '\0');
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

ControlSpec ReadFlag(const std::string& name, const Control& c) {
  ControlSpec spec;
  spec.name = name;
  for (int i = 0; i < 2; ++i) {
    if (c.int32_false_true_size() == 2) {
      spec.data_type = DataType::kInt32;
      spec.values[i] = Element<int32_t>(c.int32_false_true(i));
    } else if (c.fp32_false_true_size() == 2) {
      spec.data_type = DataType::kFp32;
      spec.values[i] = Element<float>(c.fp32_false_true(i));
    } else {
      spec.data_type = DataType::kBool;
      spec.values[i] = Element<uint8_t>(c.bool_false_true(i) ? 1 : 0);
    }
  }
  return spec;
}

// The file must name something inside <model>/initial_state: no absolute path, no "..", and
// after resolving links it must still be there (a link out of the model is refused).
StatusOr<std::string> ReadInitialFile(const std::string& model, const std::filesystem::path& dir,
                                      const std::string& file) {
  namespace fs = std::filesystem;
  const fs::path rel(file);
  auto refuse = [&](const std::string& why) {
    return InvalidArgument("model '" + model + "': initial_state data_file '" + file + "' " + why);
  };
  if (file.empty() || rel.is_absolute()) return refuse("must be a relative path");
  for (const auto& part : rel) {
    if (part == "..") return refuse("must stay within the model's initial_state directory");
  }
  std::error_code ec;
  const fs::path base = fs::weakly_canonical(dir / "initial_state", ec);
  const fs::path full = fs::weakly_canonical(dir / "initial_state" / rel, ec);
  if (ec) return refuse("cannot be resolved: " + ec.message());
  const std::string b = base.string() + "/";
  if (full.string().rfind(b, 0) != 0) {
    return refuse("must stay within the model's initial_state directory");
  }
  std::ifstream in(full, std::ios::binary);
  if (!in) return refuse("cannot be read");
  std::ostringstream data;
  data << in.rdbuf();
  return data.str();
}

Status ReadInitialState(const inference::ModelConfig& config, const std::filesystem::path& dir,
                        const inference::ModelSequenceBatching::State& s, StateSpec* spec) {
  if (s.initial_state_size() == 0) return Status::Ok();
  if (s.initial_state_size() > 1) {
    return InvalidArgument("model '" + config.name() + "': state '" + s.input_name() +
                           "' may have at most one initial_state");
  }
  const auto& init = s.initial_state(0);
  const std::string what =
      "model '" + config.name() + "': initial_state of state '" + s.input_name() + "'";
  if (init.data_type() != s.data_type()) {
    return InvalidArgument(what + " must have the state's data_type " +
                           inference::DataType_Name(s.data_type()));
  }
  spec->initial_dims.assign(init.dims().begin(), init.dims().end());
  if (!ShapeMatches(spec->initial_dims, spec->dims) ||
      !ElementCount(spec->initial_dims).has_value()) {
    return InvalidArgument(what + " has dims " + ShapeToString(spec->initial_dims) +
                           ", which must be fully specified and match the state dims " +
                           ShapeToString(spec->dims));
  }
  const int64_t count = *ElementCount(spec->initial_dims);
  const bool bytes = spec->data_type == DataType::kBytes;
  const size_t expected =
      bytes ? 0 : static_cast<size_t>(count) * DataTypeByteSize(spec->data_type);
  if (init.state_data_case() == inference::ModelSequenceBatching::InitialState::kDataFile) {
    NEREID_ASSIGN_OR_RETURN(spec->initial_data,
                            ReadInitialFile(config.name(), dir, init.data_file()));
    if (!bytes && spec->initial_data.size() != expected) {
      return InvalidArgument(what + ": data_file '" + init.data_file() + "' holds " +
                             std::to_string(spec->initial_data.size()) + " bytes, expected " +
                             std::to_string(expected));
    }
  } else if (init.zero_data()) {
    // A BYTES element is an empty string: a zero length prefix.
    spec->initial_data.assign(bytes ? static_cast<size_t>(count) * 4 : expected, '\0');
  } else {
    return InvalidArgument(what + " must specify 'zero_data' or 'data_file'");
  }
  spec->has_initial = true;
  return Status::Ok();
}

}  // namespace

StatusOr<SequenceOptions> SequenceOptions::FromConfig(const inference::ModelConfig& config,
                                                      const std::filesystem::path& model_dir) {
  const auto& sb = config.sequence_batching();
  if (config.model_transaction_policy().decoupled() && sb.state_size() > 0) {
    // Nereid keeps implicit state from a request's response; a decoupled request has 0..N.
    return Unsupported("model '" + config.name() +
                       "': implicit state (sequence_batching 'state') is not supported for "
                       "models with 'decoupled' transaction policy");
  }
  SequenceOptions o;
  o.max_batch_size = config.max_batch_size();
  o.iterative = sb.iterative_sequence();
  if (sb.max_sequence_idle_microseconds() != 0) {
    o.idle_ns = MicrosToNanos(sb.max_sequence_idle_microseconds());
  }
  const size_t mbs = static_cast<size_t>(std::max(1, config.max_batch_size()));
  if (sb.has_oldest()) {
    o.strategy = Strategy::kOldest;
    const auto& old = sb.oldest();
    o.max_queue_delay_ns = MicrosToNanos(old.max_queue_delay_microseconds());
    o.preferred_batch_sizes.assign(old.preferred_batch_size().begin(),
                                   old.preferred_batch_size().end());
    o.preserve_ordering = old.preserve_ordering();
    o.slots_per_instance = old.max_candidate_sequences() > 0
                               ? static_cast<size_t>(old.max_candidate_sequences())
                               : mbs;
  } else {
    o.max_queue_delay_ns = MicrosToNanos(sb.direct().max_queue_delay_microseconds());
    o.minimum_slot_utilization = sb.direct().minimum_slot_utilization();
    o.slots_per_instance = mbs;
  }
  for (const auto& input : sb.control_input()) {
    for (const Control& c : input.control()) {
      switch (c.kind()) {
        case Control::CONTROL_SEQUENCE_START:
          o.start = ReadFlag(input.name(), c);
          break;
        case Control::CONTROL_SEQUENCE_END:
          o.end = ReadFlag(input.name(), c);
          break;
        case Control::CONTROL_SEQUENCE_READY:
          o.ready = ReadFlag(input.name(), c);
          break;
        case Control::CONTROL_SEQUENCE_CORRID:
          o.corrid = CorridSpec{input.name(), static_cast<DataType>(c.data_type())};
          break;
        default:
          break;
      }
    }
  }
  for (const auto& s : sb.state()) {
    StateSpec spec;
    spec.input_name = s.input_name();
    spec.output_name = s.output_name();
    spec.data_type = static_cast<DataType>(s.data_type());
    spec.dims.assign(s.dims().begin(), s.dims().end());
    NEREID_RETURN_IF_ERROR(ReadInitialState(config, model_dir, s, &spec));
    o.states.push_back(std::move(spec));
  }
  return o;
}

}  // namespace nereid
