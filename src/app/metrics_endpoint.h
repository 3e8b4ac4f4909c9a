// The metrics service's endpoint (frontends/metrics/metrics_service.h) on the project's HTTP server
// (frontends/http/text_endpoint.h): GET /metrics answers the scrape, anything but GET 405, any
// other path 400. Kept in src/app, the one layer that sees both frontends. With `host` (the
// running inference HTTP server, which must outlive the endpoint's Stop) the metrics port is a
// second listening socket on its event loop; without (--allow-http=false) it runs its own thread.
#pragma once

#include "frontends/metrics/metrics_service.h"

namespace nereid {

class HttpServer;

MetricsEndpointFactory HttpMetricsEndpoint(HttpServer* host);

}  // namespace nereid
