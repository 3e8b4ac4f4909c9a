#include "app/process_environment.h"

#include <cstdlib>
#include <string>

namespace nereid {

void SetLibraryEnvironmentDefaults() {
  // overwrite = 0: an exported value wins.
  setenv(std::string(kOrtTelemetryVariable).c_str(), "1", 0);
}

}  // namespace nereid
