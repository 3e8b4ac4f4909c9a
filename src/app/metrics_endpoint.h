// The metrics service's endpoint (frontends/metrics/metrics_service.h) on the project's HTTP server
// (frontends/http/text_endpoint.h): GET /metrics answers the scrape, anything but GET 405, any
// other path 400. Kept in src/app, the one layer that sees both frontends.
#pragma once

#include "frontends/metrics/metrics_service.h"

namespace nereid {

MetricsEndpointFactory HttpMetricsEndpoint();

}  // namespace nereid
