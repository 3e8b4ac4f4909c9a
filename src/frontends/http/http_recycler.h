// The per-thread block caches moved to common/block_recycler.h (the core's per-request
// completion uses them too); this header stays for the transport's includes.
#pragma once

#include "common/block_recycler.h"
