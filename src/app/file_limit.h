// The process's open-file limit and what it allows the HTTP server.
//
// Thread-safety: call RaiseOpenFileLimit once at start-up, before any thread starts.
#pragma once

#include <cstdint>

namespace nereid {

// Raises the soft RLIMIT_NOFILE to the hard limit (at most 1 Mi), as Go's runtime does: the
// soft default of 1024 is a select() era relic and every connection costs one descriptor.
// Returns the soft limit in force afterwards (0 if it cannot be read).
uint64_t RaiseOpenFileLimit();

// Default for --http-max-connections: three quarters of the descriptors (the rest stays for
// gRPC connections, model files, logs and the metrics port), at least 16, at most 16384.
uint64_t DefaultHttpMaxConnections(uint64_t open_file_limit);

}  // namespace nereid
