#include "frontends/http/settings_body.h"

#include <string>

namespace nereid {

StatusOr<bool> ParseSettingsBody(std::string_view body, rapidjson::Document* doc) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) return false;
  doc->Parse<rapidjson::kParseIterativeFlag>(body.data(), body.size());
  if (doc->HasParseError()) {
    return InvalidArgument("failed to parse the request JSON buffer: offset " +
                           std::to_string(doc->GetErrorOffset()));
  }
  if (!doc->IsObject()) return InvalidArgument("the request body must be a JSON object");
  return true;
}

}  // namespace nereid
