#include "standin_process.hpp"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace airlock::backend::kubernetes::test {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

}  // namespace

StandIn::StandIn() {
  int in[2], out[2];
  if (::pipe(in) != 0 || ::pipe(out) != 0) throw std::runtime_error("pipe");
  std::string cert = pki_.file("server.pem"), key = pki_.file("server.key");
  pid_ = ::fork();
  if (pid_ == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::close(in[1]);
    ::close(out[0]);
    ::setenv("STANDIN_CERT", cert.c_str(), 1);
    ::setenv("STANDIN_KEY", key.c_str(), 1);
    ::setenv("STANDIN_TOKEN", token_.c_str(), 1);
    ::execlp(AIRLOCK_NODE, AIRLOCK_NODE, STANDIN_SERVER, nullptr);
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  stdin_fd_ = in[1];
  std::string line = read_line(out[0]);
  ::close(out[0]);
  if (line.rfind("listening ", 0) != 0) throw std::runtime_error("the stand-in did not start: " + line);
  port_ = std::stoi(line.substr(10));
  control_ = std::make_unique<KubeClient>(endpoint());
}

StandIn::~StandIn() {
  if (stdin_fd_ >= 0) ::close(stdin_fd_);  // it exits when its stdin ends
  if (pid_ > 0) {
    ::kill(pid_, SIGTERM);
    ::waitpid(pid_, nullptr, 0);
  }
}

KubeEndpoint StandIn::endpoint() const {
  KubeEndpoint endpoint;
  endpoint.host = "127.0.0.1";
  endpoint.port = std::to_string(port_);
  endpoint.ca_pem = read_text(pki_.file("ca.pem"));
  endpoint.bearer_token = token_;
  return endpoint;
}

std::string StandIn::write_kubeconfig(const std::string& token, const std::string& host) const {
  std::string path = pki_.dir() + "/kubeconfig";
  std::ofstream out(path);
  out << "apiVersion: v1\nkind: Config\ncurrent-context: standin\n"
      << "clusters:\n- name: standin\n  cluster:\n    server: https://" << host << ":" << port_ << "\n"
      << "    certificate-authority: ca.pem\n"
      << "contexts:\n- name: standin\n  context: {cluster: standin, user: airlock, namespace: airlock-tools}\n"
      << "users:\n- name: airlock\n  user:\n    token: " << (token.empty() ? token_ : token) << "\n";
  return path;
}

nlohmann::json StandIn::state() {
  auto response = control_->request("GET", "/standin/state");
  if (!response || response->status != 200) throw std::runtime_error("the stand-in's state cannot be read");
  return nlohmann::json::parse(response->body);
}

void StandIn::inject(const nlohmann::json& fault) {
  auto response = control_->request("POST", "/standin/faults", fault.dump());
  if (!response || response->status != 200) throw std::runtime_error("the fault was not queued");
}

}  // namespace airlock::backend::kubernetes::test
