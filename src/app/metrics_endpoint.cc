#include "app/metrics_endpoint.h"

#include <chrono>
#include <utility>

#include "frontends/http/http_server.h"
#include "frontends/http/text_endpoint.h"

namespace nereid {
namespace {

class HttpEndpoint : public MetricsEndpoint {
 public:
  explicit HttpEndpoint(std::unique_ptr<HttpServer> http) : http_(std::move(http)) {}
  int port() const override { return http_->port(); }
  // Scrapes in flight get a second to be written; the I/O thread is joined.
  void Stop() override { http_->Stop(std::chrono::milliseconds(1000)); }

 private:
  std::unique_ptr<HttpServer> http_;
};

}  // namespace

MetricsEndpointFactory HttpMetricsEndpoint(HttpServer* host) {
  return [host](const std::string& address, int port,
                std::function<std::string()> scrape) -> StatusOr<std::unique_ptr<MetricsEndpoint>> {
    TextEndpointOptions options;
    options.address = address;
    options.port = port;
    options.path = "/metrics";
    NEREID_ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> http,
                            StartTextEndpoint(options, std::move(scrape), host));
    return std::unique_ptr<MetricsEndpoint>(std::make_unique<HttpEndpoint>(std::move(http)));
  };
}

}  // namespace nereid
