#include "frontends/http/json_request_parser.h"

#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

#include <algorithm>
#include <limits>

#include "common/error_text.h"
#include "core/request/name_set.h"
#include "core/request/request_limits.h"
#include "frontends/http/json_request_builders.h"
#include "frontends/http/json_sax_events.h"

namespace nereid {
namespace {

using Ev = JsonEv;
using Event = JsonEvent;

bool IsScalar(Ev k) {
  return k == Ev::kBool || k == Ev::kInt || k == Ev::kUint || k == Ev::kDouble ||
         k == Ev::kString || k == Ev::kNull;
}

JsonScalar ToScalar(const Event& e) {
  switch (e.kind) {
    case Ev::kBool:
      return e.b;
    case Ev::kInt:
      return e.i;
    case Ev::kUint:
      return e.u;
    case Ev::kDouble:
      return e.d;
    default:
      return std::string(e.s);
  }
}

// SAX handler: a flat state machine over the fixed shape of an inference request. Unknown keys
// are skipped whole; every StartObject/StartArray counts towards the nesting limit.
class RequestHandler {
 public:
  RequestHandler(ParsedInferHeader* out, size_t json_size) : out_(out), json_size_(json_size) {}

  // JsonEventAdapter sink.
  bool On(const Event& e);

  const Status& status() const { return status_; }

 private:
  enum class State {
    kStart,
    kRoot,
    kId,
    kParamsStart,
    kParams,
    kParamValue,
    kInputsStart,
    kInputs,
    kInput,
    kInputName,
    kDatatype,
    kShapeStart,
    kShape,
    kDataStart,
    kData,
    kOutputsStart,
    kOutputs,
    kOutput,
    kOutputName,
    kSkip,
    kDone
  };

  bool Fail(Status s) {
    status_ = std::move(s);
    return false;
  }
  bool Fail(std::string msg) { return Fail(InvalidArgument(std::move(msg))); }

  bool Dispatch(const Event& e);
  bool OnRoot(const Event& e);
  bool OnParamValue(const Event& e);
  bool OnInput(const Event& e);
  bool OnShape(const Event& e);
  bool OnData(const Event& e);
  bool OnOutput(const Event& e);
  bool OnSkip(const Event& e);
  bool ExpectString(const Event& e, std::string_view field, std::string* dst, State next);
  bool ExpectStart(const Event& e, Ev kind, std::string_view field, State next);
  void BeginParams(Parameters* target, size_t limit, Status (*too_many)(), State ret);
  void BeginSkip(State ret);
  void StartData();
  bool FinishInput();
  bool FinishOutput();
  bool FinishRoot();

  ParsedInferHeader* out_;
  size_t json_size_;
  Status status_;
  State state_ = State::kStart;
  int depth_ = 0;
  bool saw_inputs_ = false;
  Parameters* params_target_ = nullptr;
  size_t params_limit_ = 0;
  Status (*params_too_many_)() = nullptr;
  State params_return_ = State::kRoot;
  std::string key_;
  State skip_return_ = State::kRoot;
  int skip_depth_ = 0;
  int data_depth_ = 0;
  InputBuilder input_;
  OutputBuilder output_;
  NameSet input_names_;
  NameSet output_names_;
};

bool RequestHandler::On(const Event& e) {
  if (e.kind == Ev::kStartObject || e.kind == Ev::kStartArray) {
    if (++depth_ > kMaxJsonNestingDepth) {
      return Fail("JSON nesting depth exceeds maximum allowed limit (" +
                  std::to_string(kMaxJsonNestingDepth) + ")");
    }
  } else if (e.kind == Ev::kEndObject || e.kind == Ev::kEndArray) {
    --depth_;
  }
  return Dispatch(e);
}

bool RequestHandler::Dispatch(const Event& e) {
  switch (state_) {
    case State::kStart:
      if (e.kind != Ev::kStartObject) return Fail("the inference request must be a JSON object");
      state_ = State::kRoot;
      return true;
    case State::kRoot:
      return OnRoot(e);
    case State::kId:
      return ExpectString(e, "id", &out_->request->id, State::kRoot);
    case State::kParamsStart:
      return ExpectStart(e, Ev::kStartObject, "parameters", State::kParams);
    case State::kParams:
      if (e.kind == Ev::kEndObject) {
        state_ = params_return_;
        return true;
      }
      key_.assign(e.s);  // RapidJSON only calls Key or EndObject here
      state_ = State::kParamValue;
      return true;
    case State::kParamValue:
      return OnParamValue(e);
    case State::kInputsStart:
      return ExpectStart(e, Ev::kStartArray, "inputs", State::kInputs);
    case State::kInputs:
      if (e.kind == Ev::kEndArray) {
        state_ = State::kRoot;
        return true;
      }
      if (e.kind != Ev::kStartObject) return Fail("Unable to parse 'inputs'");
      if (out_->request->inputs.size() >= kMaxRequestInputs) return Fail(TooManyInputs());
      input_ = InputBuilder{};
      state_ = State::kInput;
      return true;
    case State::kInput:
      return OnInput(e);
    case State::kInputName:
      return ExpectString(e, "name", &input_.input.name, State::kInput);
    case State::kDatatype:
      return ExpectString(e, "datatype", &input_.datatype_name, State::kInput);
    case State::kShapeStart:
      return ExpectStart(e, Ev::kStartArray, "shape", State::kShape);
    case State::kShape:
      return OnShape(e);
    case State::kDataStart:
      if (!ExpectStart(e, Ev::kStartArray, "data", State::kData)) return false;
      StartData();
      return true;
    case State::kData:
      return OnData(e);
    case State::kOutputsStart:
      return ExpectStart(e, Ev::kStartArray, "outputs", State::kOutputs);
    case State::kOutputs:
      if (e.kind == Ev::kEndArray) {
        state_ = State::kRoot;
        return true;
      }
      if (e.kind != Ev::kStartObject) return Fail("Unable to parse 'outputs'");
      if (out_->request->outputs.size() >= kMaxRequestOutputs) return Fail(TooManyOutputs());
      output_ = OutputBuilder{};
      state_ = State::kOutput;
      return true;
    case State::kOutput:
      return OnOutput(e);
    case State::kOutputName:
      return ExpectString(e, "name", &output_.output.name, State::kOutput);
    case State::kSkip:
      return OnSkip(e);
    case State::kDone:
      break;
  }
  return Fail(Internal("unexpected JSON after the end of the request"));
}

bool RequestHandler::ExpectString(const Event& e, std::string_view field, std::string* dst,
                                  State next) {
  if (e.kind != Ev::kString) return Fail("Unable to parse '" + std::string(field) + "'");
  dst->assign(e.s);
  if (state_ == State::kInputName) input_.has_name = true;
  if (state_ == State::kDatatype) input_.has_datatype = true;
  if (state_ == State::kOutputName) output_.has_name = true;
  state_ = next;
  return true;
}

bool RequestHandler::ExpectStart(const Event& e, Ev kind, std::string_view field, State next) {
  if (e.kind != kind) return Fail("Unable to parse '" + std::string(field) + "'");
  state_ = next;
  return true;
}

void RequestHandler::BeginParams(Parameters* target, size_t limit, Status (*too_many)(),
                                 State ret) {
  params_target_ = target;
  params_limit_ = limit;
  params_too_many_ = too_many;
  params_return_ = ret;
  state_ = State::kParamsStart;
}

void RequestHandler::BeginSkip(State ret) {
  skip_return_ = ret;
  skip_depth_ = 0;
  state_ = State::kSkip;
}

bool RequestHandler::OnSkip(const Event& e) {
  if (e.kind == Ev::kStartObject || e.kind == Ev::kStartArray) {
    ++skip_depth_;
  } else if (e.kind == Ev::kEndObject || e.kind == Ev::kEndArray) {
    --skip_depth_;
  }
  if (skip_depth_ == 0) state_ = skip_return_;
  return true;
}

bool RequestHandler::OnRoot(const Event& e) {
  if (e.kind == Ev::kEndObject) return FinishRoot();
  if (e.s == "id") {
    state_ = State::kId;
  } else if (e.s == "parameters") {
    BeginParams(&out_->request->parameters, kMaxRequestParameters, TooManyRequestParameters,
                State::kRoot);
  } else if (e.s == "inputs") {
    saw_inputs_ = true;
    state_ = State::kInputsStart;
  } else if (e.s == "outputs") {
    state_ = State::kOutputsStart;
  } else {
    BeginSkip(State::kRoot);
  }
  return true;
}

bool RequestHandler::OnParamValue(const Event& e) {
  switch (e.kind) {
    case Ev::kBool:
      params_target_->Set(key_, e.b);
      break;
    case Ev::kInt:
      params_target_->Set(key_, e.i);
      break;
    case Ev::kUint:
      if (e.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        params_target_->Set(key_, static_cast<int64_t>(e.u));
      } else {
        params_target_->Set(key_, e.u);
      }
      break;
    case Ev::kDouble:
      params_target_->Set(key_, e.d);
      break;
    case Ev::kString:
      params_target_->Set(key_, std::string(e.s));
      break;
    default:
      return Fail("parameter '" + ClientText(key_) +
                  "' has invalid type. It should be either 'int', 'bool', 'double' or 'string'.");
  }
  // Distinct keys count: a repeated key replaces its value (Parameters::Set is O(1)).
  if (params_target_->size() > params_limit_) return Fail(params_too_many_());
  state_ = State::kParams;
  return true;
}

bool RequestHandler::OnInput(const Event& e) {
  if (e.kind == Ev::kEndObject) return FinishInput();
  if (e.s == "name") {
    state_ = State::kInputName;
  } else if (e.s == "shape") {
    input_.input.shape.clear();
    input_.input.shape.reserve(4);  // one allocation for the usual shapes instead of 2-3
    state_ = State::kShapeStart;
  } else if (e.s == "datatype") {
    state_ = State::kDatatype;
  } else if (e.s == "parameters") {
    BeginParams(&input_.input.parameters, kMaxTensorParameters, TooManyInputParameters,
                State::kInput);
  } else if (e.s == "data") {
    state_ = State::kDataStart;
  } else {
    BeginSkip(State::kInput);
  }
  return true;
}

bool RequestHandler::OnShape(const Event& e) {
  if (e.kind == Ev::kEndArray) {
    input_.has_shape = true;
    state_ = State::kInput;
    return true;
  }
  if (e.kind == Ev::kUint && e.u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    input_.input.shape.push_back(static_cast<int64_t>(e.u));
    return true;
  }
  // Triton reads each dim with TritonJson's AsUInt; its QA matches this text.
  return Fail(
      "Unable to parse 'shape': attempt to access JSON non-unsigned-integer as unsigned-integer");
}

void RequestHandler::StartData() {
  InputBuilder& b = input_;
  b.has_data = true;
  b.buffer = std::make_shared<std::string>();
  b.pending.clear();
  b.appender.reset();
  data_depth_ = 1;
  const auto type = DataTypeFromWireName(b.datatype_name);
  if (!b.has_datatype || !type) return;
  b.appender.emplace(*type, b.buffer.get());
  // Each JSON element takes at least two bytes ("0,"), which bounds a hostile shape's reserve.
  const auto count = ElementCount(b.input.shape);
  const size_t elem = DataTypeByteSize(*type);
  if (b.has_shape && count && elem > 0) {
    b.buffer->reserve(std::min<size_t>(static_cast<size_t>(*count), json_size_ / 2 + 1) * elem);
  }
}

bool RequestHandler::OnData(const Event& e) {
  if (e.kind == Ev::kStartArray) {
    ++data_depth_;
    return true;
  }
  if (e.kind == Ev::kEndArray) {
    if (--data_depth_ == 0) state_ = State::kInput;
    return true;
  }
  if (!IsScalar(e.kind) || e.kind == Ev::kNull) {
    return Fail("Unable to parse 'data': elements must be numbers, booleans or strings");
  }
  InputBuilder& b = input_;
  if (!b.appender) {
    b.pending.push_back(ToScalar(e));
    return true;
  }
  Status s;
  switch (e.kind) {
    case Ev::kBool:
      s = b.appender->AppendBool(e.b);
      break;
    case Ev::kInt:
      s = b.appender->AppendInt(e.i);
      break;
    case Ev::kUint:
      s = b.appender->AppendUint(e.u);
      break;
    case Ev::kDouble:
      s = b.appender->AppendDouble(e.d);
      break;
    default:
      s = b.appender->AppendString(e.s);
      break;
  }
  if (!s.ok()) return Fail("Unable to parse 'data': " + s.message());
  return true;
}

bool RequestHandler::OnOutput(const Event& e) {
  if (e.kind == Ev::kEndObject) return FinishOutput();
  if (e.s == "name") {
    state_ = State::kOutputName;
  } else if (e.s == "parameters") {
    BeginParams(&output_.output.parameters, kMaxTensorParameters, TooManyOutputParameters,
                State::kOutput);
  } else {
    BeginSkip(State::kOutput);
  }
  return true;
}

bool RequestHandler::FinishInput() {
  Status s = nereid::FinishInput(input_, &input_names_, out_);
  if (!s.ok()) return Fail(std::move(s));
  state_ = State::kInputs;
  return true;
}

bool RequestHandler::FinishOutput() {
  Status s = nereid::FinishOutput(output_, &output_names_, out_);
  if (!s.ok()) return Fail(std::move(s));
  state_ = State::kOutputs;
  return true;
}

bool RequestHandler::FinishRoot() {
  Status s = FinishRequest(saw_inputs_, out_);
  if (!s.ok()) return Fail(std::move(s));
  state_ = State::kDone;
  return true;
}

}  // namespace

// The in-place parse's scratch, kept per thread so that a steady stream of requests allocates
// neither the header copy nor the reader (its allocator and its state stack). In place, strings
// and numbers are never pushed onto the stack, so it holds only the iterative parser's state per
// nesting level (bounded by kMaxJsonNestingDepth); the copy is given back when a request was
// larger than kKeptTextBytes.
namespace {
struct InsituScratch {
  static constexpr size_t kKeptTextBytes = 64 * 1024;
  rapidjson::CrtAllocator allocator;
  rapidjson::Reader reader{&allocator};
  std::string text;
};
}  // namespace

StatusOr<ParsedInferHeader> ParseInferRequestJson(std::string_view json) {
  ParsedInferHeader out;
  out.request = std::make_unique<InferenceRequest>();
  RequestHandler handler(&out, json.size());
  JsonEventAdapter<RequestHandler> adapter(&handler);
  // Iterative parsing: no recursion, so nesting cannot exhaust the stack even before the
  // handler's depth limit trips. Numbers arrive as text and are converted by the adapter with
  // std::from_chars (exact, like full precision): rapidjson 1.1.0's own full-precision conversion
  // reads far outside a static table for inputs such as "0." followed by 500 zeros, which
  // crashed the server (found by fuzz/fuzz_json_infer; docs/fuzzing.md).
  constexpr unsigned kFlags = rapidjson::kParseIterativeFlag |
                              rapidjson::kParseNumbersAsStringsFlag |
                              rapidjson::kParseNanAndInfFlag;
  rapidjson::ParseResult result;
  if (json.find('\0') == std::string_view::npos) {
    // In place, on a private copy of the header (a memcpy, cheap next to parsing): numbers are
    // handed over as text where they stand and strings unescaped where they stand, where the
    // copying parser would push every character onto its stack first. The copy's terminating
    // NUL ends the input, so this path is only for text without one. Nothing the handler keeps
    // points into the copy (names and values are copied out), so it is reused.
    thread_local InsituScratch scratch;
    scratch.text.assign(json);
    rapidjson::InsituStringStream stream(scratch.text.data());
    result = scratch.reader.Parse<kFlags | rapidjson::kParseInsituFlag>(stream, adapter);
    if (scratch.text.capacity() > InsituScratch::kKeptTextBytes) std::string().swap(scratch.text);
  } else {  // never valid JSON, but the error must name what the client sent
    rapidjson::CrtAllocator allocator;
    rapidjson::Reader reader(&allocator);
    rapidjson::MemoryStream stream(json.data(), json.size());
    result = reader.Parse<kFlags>(stream, adapter);
  }
  if (!handler.status().ok()) return handler.status();
  if (result.IsError()) {
    return InvalidArgument(std::string("failed to parse the request JSON buffer: ") +
                           rapidjson::GetParseError_En(result.Code()) + " at " +
                           std::to_string(result.Offset()));
  }
  return out;
}

}  // namespace nereid
