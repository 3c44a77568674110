// The connection to the API server that KubeClient makes, for the backend's own use by other
// kinds of connection (pods/exec's WebSocket): the same TLS context, certificate checks and
// credentials. Not a public header of the backend.
#pragma once

#include <chrono>
#include <memory>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include "backend/kubernetes/kube_client.hpp"

namespace airlock::backend::kubernetes {

struct KubeClient::Tls {
  boost::asio::io_context io;
  boost::asio::ssl::context context{boost::asio::ssl::context::tls_client};
};

using Stream = boost::beast::ssl_stream<boost::beast::tcp_stream>;

// A request, and a watch's connection, that the server leaves hanging ends after this.
inline constexpr std::chrono::seconds kIoTimeout{30};

// Connects and handshakes within kIoTimeout, checking the certificate names the host (DNS
// name or IP address).
Result<std::unique_ptr<Stream>> connect(boost::asio::io_context& io, boost::asio::ssl::context& context,
                                        const KubeEndpoint& endpoint);

// Host, User-Agent and the bearer token (when the endpoint has one) on a request's fields.
void authorize(boost::beast::http::fields& fields, const KubeEndpoint& endpoint);

}  // namespace airlock::backend::kubernetes
