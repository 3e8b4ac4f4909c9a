#include "python/python_shared.h"

#include <iostream>

namespace nereid::backends::python {

void Log(const Settings& settings, backend::LogLevel level, const std::string& message) {
  if (settings.log) {
    settings.log(level, message);
  } else {
    std::cerr << message << std::endl;
  }
}

backend::LogLevel StubLogLevel(int level) {
  switch (level) {
    case 1:
      return backend::LogLevel::kWarning;
    case 2:
      return backend::LogLevel::kError;
    case 3:
      return backend::LogLevel::kVerbose;
    default:
      return backend::LogLevel::kInfo;
  }
}

}  // namespace nereid::backends::python
