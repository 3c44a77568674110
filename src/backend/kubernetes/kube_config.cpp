#include "backend/kubernetes/kube_config.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <yaml-cpp/yaml.h>

#include "common/base64.hpp"
#include "common/http_url.hpp"

namespace airlock::backend::kubernetes {
namespace {

Error config_error(const std::string& message) { return Error::make("kubernetes", message); }

Result<std::string> read_file(const std::string& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return config_error("cannot read " + what + " " + path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

// A kubeconfig's *-data field: base64, perhaps wrapped over lines.
Result<std::string> base64_decode(const std::string& text, const std::string& what) {
  std::string clean;
  for (char c : text)
    if (c != '\n' && c != '\r' && c != ' ') clean += c;
  auto bytes = airlock::base64_decode(clean);
  if (!bytes) return config_error(what + " is not valid base64");
  return std::move(*bytes);
}

// A path in a kubeconfig is relative to the file's directory.
std::string relative_to(const std::string& base_file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (std::filesystem::path(base_file).parent_path() / path).string();
}

// `field-data` (base64) or `field` (a file): the PEM or token text, "" when neither is set.
Result<std::string> data_or_file(const YAML::Node& node, const std::string& field,
                                 const std::string& config_path) {
  if (node[field + "-data"]) return base64_decode(node[field + "-data"].as<std::string>(), field + "-data");
  if (node[field]) return read_file(relative_to(config_path, node[field].as<std::string>()), field);
  return std::string();
}

YAML::Node named_entry(const YAML::Node& list, const std::string& name, const char* inner) {
  if (list && list.IsSequence())
    for (const auto& entry : list)
      if (entry["name"] && entry["name"].as<std::string>() == name) return entry[inner];
  return YAML::Node(YAML::NodeType::Undefined);
}

// https://HOST[:PORT][/] only: the API server is never spoken to in clear. Read by the one
// URL parser (common/http_url.hpp).
Status parse_server(const std::string& server, KubeEndpoint& endpoint) {
  if (!server.starts_with("https://")) return config_error("the cluster's server " + server + " is not an https:// URL");
  auto url = parse_http_url(server);
  if (!url) return config_error("the cluster's server " + server + ": " + url.error().message);
  if (url->has_path || url->has_query) return config_error("a server with a path is not supported: " + server);
  endpoint.host = url->host;
  endpoint.port = url->port;
  return Status::success();
}

Status read_cluster(const YAML::Node& cluster, const std::string& path, KubeEndpoint& endpoint) {
  if (!cluster || !cluster["server"]) return config_error("the context's cluster has no server");
  if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>())
    return config_error("insecure-skip-tls-verify is refused: give the cluster's CA");
  if (auto status = parse_server(cluster["server"].as<std::string>(), endpoint); !status) return status;
  auto ca = data_or_file(cluster, "certificate-authority", path);
  if (!ca) return ca.error();
  if (ca->empty()) return config_error("the cluster has no certificate-authority(-data)");
  endpoint.ca_pem = *ca;
  return Status::success();
}

Status read_user(const YAML::Node& user, const std::string& path, KubeEndpoint& endpoint) {
  if (!user) return config_error("the context names no known user");
  if (user["exec"] || user["auth-provider"])
    return config_error("exec and auth-provider credentials are not supported: use a token or a client certificate");
  if (user["token"]) endpoint.bearer_token = user["token"].as<std::string>();
  if (user["tokenFile"]) {
    auto token = read_file(relative_to(path, user["tokenFile"].as<std::string>()), "tokenFile");
    if (!token) return token.error();
    endpoint.bearer_token = *token;
  }
  auto cert = data_or_file(user, "client-certificate", path);
  if (!cert) return cert.error();
  auto key = data_or_file(user, "client-key", path);
  if (!key) return key.error();
  endpoint.client_cert_pem = *cert;
  endpoint.client_key_pem = *key;
  while (!endpoint.bearer_token.empty() && std::isspace(static_cast<unsigned char>(endpoint.bearer_token.back())))
    endpoint.bearer_token.pop_back();
  if (endpoint.bearer_token.empty() && endpoint.client_cert_pem.empty())
    return config_error("the user has neither a token nor a client certificate");
  return Status::success();
}

}  // namespace

Result<KubeEndpoint> load_kubeconfig(const std::string& path) {
  try {
    YAML::Node root = YAML::LoadFile(path);
    KubeEndpoint endpoint;
    if (!root["current-context"]) return config_error(path + " has no current-context");
    endpoint.context = root["current-context"].as<std::string>();
    YAML::Node context = named_entry(root["contexts"], endpoint.context, "context");
    if (!context) return config_error(path + ": context " + endpoint.context + " is not defined");
    YAML::Node cluster = named_entry(root["clusters"], context["cluster"].as<std::string>(""), "cluster");
    if (auto status = read_cluster(cluster, path, endpoint); !status) return status.error();
    YAML::Node user = named_entry(root["users"], context["user"].as<std::string>(""), "user");
    if (auto status = read_user(user, path, endpoint); !status) return status.error();
    return endpoint;
  } catch (const YAML::Exception& e) {
    return config_error("cannot read the kubeconfig " + path + ": " + e.what());
  }
}

Result<KubeEndpoint> load_in_cluster(const std::string& account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !*host)
    return config_error("not in a cluster (KUBERNETES_SERVICE_HOST is unset): set tiers.<risk>.kubernetes.kubeconfig");
  KubeEndpoint endpoint;
  endpoint.host = host;
  endpoint.port = port && *port ? port : "443";
  endpoint.context = "in-cluster";
  auto token = read_file(account_dir + "/token", "the service account token");
  if (!token) return token.error();
  auto ca = read_file(account_dir + "/ca.crt", "the service account CA");
  if (!ca) return ca.error();
  endpoint.bearer_token = *token;
  while (!endpoint.bearer_token.empty() && std::isspace(static_cast<unsigned char>(endpoint.bearer_token.back())))
    endpoint.bearer_token.pop_back();
  endpoint.ca_pem = *ca;
  return endpoint;
}

}  // namespace airlock::backend::kubernetes
