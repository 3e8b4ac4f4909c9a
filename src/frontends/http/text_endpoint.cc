#include "frontends/http/text_endpoint.h"

#include <utility>

#include "frontends/http/http_types.h"
#include "frontends/http/status_mapping.h"

namespace nereid {

StatusOr<std::unique_ptr<HttpServer>> StartTextEndpoint(const TextEndpointOptions& options,
                                                        std::function<std::string()> text,
                                                        HttpServer* host) {
  HttpServerOptions ho;
  ho.address = options.address;
  ho.port = options.port;
  ho.thread_count = 1;
  ho.thread_name = options.thread_name;
  ho.max_input_size = 64 * 1024;
  auto handler = [path = options.path, text = std::move(text)](
                     HttpRequest& request, std::shared_ptr<HttpResponder> responder) {
    if (request.method != HttpMethod::kGet) {
      return responder->Send(ErrorResponse(405, "Method Not Allowed"));
    }
    if (request.Path() != path) return responder->Send(ErrorResponse(400, "Bad Request"));
    HttpResponse r = HttpResponse::Empty(200);
    r.headers.Add("Content-Type", "text/plain; charset=utf-8");
    r.body.Append(text());
    responder->Send(std::move(r));
  };
  NEREID_ASSIGN_OR_RETURN(std::unique_ptr<HttpServer> http,
                          host != nullptr ? host->CreateGuest(ho, std::move(handler))
                                          : HttpServer::Create(ho, std::move(handler)));
  NEREID_RETURN_IF_ERROR(http->Start());
  return http;
}

}  // namespace nereid
