// kube_config: what a kubeconfig or the in-cluster service account yields, and what is refused.
// RealCluster.*: the backend against a real cluster, run by real-cluster.sh when KUBECONFIG is set.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "backend/kubernetes/kube_config.hpp"
#include "backend/kubernetes/kubernetes_backend.hpp"

namespace airlock::backend::kubernetes {
namespace {

class KubeConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("kubeconfig-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "ca.pem") << "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";
    std::ofstream(dir_ / "token") << "file-token\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string write(const std::string& cluster, const std::string& user) {
    std::string path = (dir_ / "config").string();
    std::ofstream(path) << "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                        << "clusters:\n- name: k\n  cluster:\n" << cluster
                        << "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                        << "users:\n- name: u\n  user:\n" << user;
    return path;
  }
  std::filesystem::path dir_;
};

const std::string kCluster = "    server: https://10.0.0.1:6443\n    certificate-authority: ca.pem\n";

TEST_F(KubeConfigTest, ATokenAndACaFileRelativeToTheConfig) {
  auto endpoint = load_kubeconfig(write(kCluster, "    token: abc\n"));
  ASSERT_TRUE(endpoint.ok()) << endpoint.error().message;
  EXPECT_EQ(endpoint->host, "10.0.0.1");
  EXPECT_EQ(endpoint->port, "6443");
  EXPECT_EQ(endpoint->bearer_token, "abc");
  EXPECT_NE(endpoint->ca_pem.find("BEGIN CERTIFICATE"), std::string::npos);
}

TEST_F(KubeConfigTest, ATokenFileAndBase64Data) {
  auto endpoint = load_kubeconfig(write(
      "    server: https://api.example:443\n    certificate-authority-data: Q0EtUEVN\n",
      "    tokenFile: token\n    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n"));
  ASSERT_TRUE(endpoint.ok()) << endpoint.error().message;
  EXPECT_EQ(endpoint->ca_pem, "CA-PEM");
  EXPECT_EQ(endpoint->bearer_token, "file-token");
  EXPECT_EQ(endpoint->client_cert_pem, "CERT");
  EXPECT_EQ(endpoint->client_key_pem, "KEY");
}

TEST_F(KubeConfigTest, WhatCannotBeVerifiedOrUsedIsRefused) {
  auto expect_refused = [&](const std::string& cluster, const std::string& user, const std::string& why) {
    auto endpoint = load_kubeconfig(write(cluster, user));
    ASSERT_FALSE(endpoint.ok()) << why;
    EXPECT_NE(endpoint.error().message.find(why), std::string::npos) << endpoint.error().message;
  };
  expect_refused("    server: http://10.0.0.1\n    certificate-authority: ca.pem\n", "    token: a\n", "not an https://");
  expect_refused(kCluster + "    insecure-skip-tls-verify: true\n", "    token: a\n", "insecure-skip-tls-verify");
  expect_refused("    server: https://10.0.0.1\n", "    token: a\n", "certificate-authority");
  expect_refused(kCluster, "    exec: {command: aws}\n", "exec");
  expect_refused(kCluster, "    username: admin\n", "neither a token nor a client certificate");
}

TEST_F(KubeConfigTest, InClusterReadsTheServiceAccount) {
  std::ofstream(dir_ / "ca.crt") << "CA";
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto endpoint = load_in_cluster(dir_.string());
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  ASSERT_TRUE(endpoint.ok()) << endpoint.error().message;
  EXPECT_EQ(endpoint->host, "10.96.0.1");
  EXPECT_EQ(endpoint->bearer_token, "file-token");
  auto outside = load_in_cluster(dir_.string());
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.error().message.find("KUBERNETES_SERVICE_HOST"), std::string::npos);
}

// ---- against a real cluster (real-cluster.sh) ------------------------------------------
class RealCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* config = std::getenv("KUBECONFIG");
    if (!std::getenv("AIRLOCK_REAL_CLUSTER") || !config) GTEST_SKIP() << "no cluster: run tests/kubernetes/real-cluster.sh with KUBECONFIG";
    auto endpoint = load_kubeconfig(config);
    ASSERT_TRUE(endpoint.ok()) << endpoint.error().message;
    KubernetesOptions options;
    options.namespace_name = std::getenv("AIRLOCK_TOOLS_NAMESPACE") ? std::getenv("AIRLOCK_TOOLS_NAMESPACE") : "airlock-tools";
    options.image = "busybox:1.36";
    options.instance = "real-cluster-test";
    options.gc_interval = std::chrono::hours(1);
    backend_ = std::make_unique<KubernetesBackend>(*endpoint, options);
  }
  RunRequest request(std::vector<std::string> argv) {
    RunRequest r;
    r.argv = std::move(argv);
    r.stdin_bytes = "hello from stdin";
    r.credentials = {{"API_TOKEN", "s3cret"}};
    r.limits.wall_time = std::chrono::seconds(60);
    return r;
  }
  RunContext context() {
    RunContext c;
    c.invocation_id = "real-cluster-1";
    c.tool_name = "busybox";
    return c;
  }
  std::unique_ptr<KubernetesBackend> backend_;
};

TEST_F(RealCluster, StdinReachesThePodAndStdoutComesBack) {
  RunResult result = backend_->run(request({"cat"}), context());
  ASSERT_EQ(result.verdict, sandbox::Verdict::ok) << result.message;
  EXPECT_EQ(result.stdout_data, "hello from stdin");
}

TEST_F(RealCluster, ExitCodesAndImagePullErrors) {
  RunResult exit3 = backend_->run(request({"sh", "-c", "echo oops >&2; exit 3"}), context());
  EXPECT_EQ(exit3.verdict, sandbox::Verdict::exit_nonzero) << exit3.message;
  EXPECT_EQ(exit3.exit_code, 3);
  EXPECT_EQ(exit3.stderr_data, "oops\n");
  RunRequest missing = request({"true"});
  missing.placement.image = "registry.invalid/airlock/none:0";
  RunResult pull = backend_->run(missing, context());
  EXPECT_EQ(pull.verdict, sandbox::Verdict::setup_error);
  EXPECT_NE(pull.message.find("registry.invalid/airlock/none:0"), std::string::npos) << pull.message;
}

}  // namespace
}  // namespace airlock::backend::kubernetes
