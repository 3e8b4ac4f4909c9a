// Fills the status page's data (status_page.h) from the facade: the repository index, the
// statistics and configuration of every READY version, and the recent load failures.
//
// Thread-safety: reads only the thread-safe facade; safe from any thread. Cost: one index, and
// per READY version one statistics snapshot and one configuration lookup; nothing is cached.
#pragma once

#include "frontends/http/status_page.h"

namespace nereid {

class InferenceServer;

StatusPageData CollectStatusPageData(const InferenceServer& server);

}  // namespace nereid
