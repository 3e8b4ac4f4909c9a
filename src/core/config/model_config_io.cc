#include "core/config/model_config_io.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/text_format.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <system_error>
#include <vector>

namespace nereid::config {
namespace {

namespace fs = std::filesystem;

// Keeps every parser error with a 1-based position (protobuf reports 0-based ones).
class CollectingErrorCollector : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    if (!errors_.empty()) errors_ += "; ";
    if (line >= 0) {
      errors_ +=
          "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": ";
    }
    errors_ += message;
  }

  const std::string& errors() const { return errors_; }

 private:
  std::string errors_;
};

bool IsValidUtf8(std::string_view s) {
  static constexpr uint32_t kMinCodePoint[] = {0, 0x80, 0x800, 0x10000};
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t n = 0;
    uint32_t cp = 0;
    if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + n >= s.size()) return false;
    for (size_t k = 1; k <= n; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if (cp < kMinCodePoint[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

// Proto3 strings must be UTF-8, but the text parser accepts escapes such as "\xff"; the JSON
// printer would then drop bytes silently. Returns the full name of the first bad field, or "".
std::string FindInvalidUtf8(const google::protobuf::Message& message) {
  using google::protobuf::FieldDescriptor;
  const google::protobuf::Reflection* refl = message.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  refl->ListFields(message, &fields);
  for (const FieldDescriptor* f : fields) {
    const int count = f->is_repeated() ? refl->FieldSize(message, f) : 1;
    for (int i = 0; i < count; ++i) {
      if (f->type() == FieldDescriptor::TYPE_STRING) {
        std::string scratch;
        const std::string& value = f->is_repeated()
                                       ? refl->GetRepeatedStringReference(message, f, i, &scratch)
                                       : refl->GetStringReference(message, f, &scratch);
        if (!IsValidUtf8(value)) return f->full_name();
      } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        std::string bad = FindInvalidUtf8(f->is_repeated() ? refl->GetRepeatedMessage(message, f, i)
                                                           : refl->GetMessage(message, f));
        if (!bad.empty()) return bad;
      }
    }
  }
  return "";
}

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

// Reads at most kMaxModelConfigBytes + 1 bytes so a file that grows after the size check is still
// caught.
StatusOr<std::string> ReadSmallFile(const fs::path& path) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return Internal("failed to open " + path.string() + ": " + std::strerror(errno));
  }
  std::string data;
  char buf[64 * 1024];
  while (data.size() <= kMaxModelConfigBytes) {
    size_t n = std::fread(buf, 1, sizeof(buf), file.get());
    data.append(buf, n);
    if (n < sizeof(buf)) break;
  }
  if (std::ferror(file.get())) {
    return Internal("failed to read " + path.string() + ": " + std::strerror(errno));
  }
  if (data.size() > kMaxModelConfigBytes) {
    return InvalidArgument("model configuration file " + path.string() + " is larger than " +
                           std::to_string(kMaxModelConfigBytes) + " bytes");
  }
  return data;
}

bool IsPlainFileName(std::string_view name) {
  return name != "." && name != ".." && name.find('/') == std::string_view::npos &&
         name.find('\0') == std::string_view::npos;
}

// The file to read, or an empty path when neither candidate exists.
StatusOr<fs::path> ChooseConfigFile(const fs::path& model_dir, std::string_view config_name) {
  std::vector<fs::path> candidates;
  if (!config_name.empty()) {
    if (!IsPlainFileName(config_name)) {
      return InvalidArgument("invalid model configuration name '" + std::string(config_name) +
                             "': must be a file name without '/'");
    }
    candidates.push_back(model_dir / "configs" / (std::string(config_name) + ".pbtxt"));
  }
  candidates.push_back(model_dir / "config.pbtxt");
  for (const fs::path& path : candidates) {
    std::error_code ec;
    fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) continue;
    if (ec) return Internal("failed to stat " + path.string() + ": " + ec.message());
    if (!fs::is_regular_file(st)) {
      return InvalidArgument("model configuration " + path.string() + " is not a regular file");
    }
    return path;
  }
  return fs::path();
}

}  // namespace

StatusOr<inference::ModelConfig> ParseModelConfigText(std::string_view text,
                                                      std::string_view source_path) {
  if (text.size() > kMaxModelConfigBytes) {
    return InvalidArgument("failed to parse " + std::string(source_path) + ": larger than " +
                           std::to_string(kMaxModelConfigBytes) + " bytes");
  }
  google::protobuf::io::ArrayInputStream input(text.data(), static_cast<int>(text.size()));
  CollectingErrorCollector errors;
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  inference::ModelConfig config;
  if (!parser.Parse(&input, &config)) {
    std::string detail = errors.errors().empty() ? "invalid text format" : errors.errors();
    return InvalidArgument("failed to parse " + std::string(source_path) + ": " + detail);
  }
  if (std::string bad = FindInvalidUtf8(config); !bad.empty()) {
    return InvalidArgument("failed to parse " + std::string(source_path) + ": string field '" +
                           bad + "' is not valid UTF-8");
  }
  return config;
}

StatusOr<std::optional<inference::ModelConfig>> ReadModelConfig(const fs::path& model_dir,
                                                                std::string_view config_name) {
  NEREID_ASSIGN_OR_RETURN(fs::path path, ChooseConfigFile(model_dir, config_name));
  if (path.empty()) return std::optional<inference::ModelConfig>();
  NEREID_ASSIGN_OR_RETURN(std::string text, ReadSmallFile(path));
  NEREID_ASSIGN_OR_RETURN(inference::ModelConfig config, ParseModelConfigText(text, path.string()));
  return std::optional<inference::ModelConfig>(std::move(config));
}

}  // namespace nereid::config
