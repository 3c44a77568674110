// The configuration loader: what it accepts, and that every mistake is named with file:line.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "policy/config.hpp"

namespace airlock::policy {
namespace {

const char* kMinimal = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
principals:
  - name: agent
    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
    tools: ["echo-*"]
tools:
  - name: echo-json
    runtime: {type: command, command: [/bin/cat]}
    risk: medium
    limits: {timeout: 2s, memory: 64Mi}
    inputSchema: {type: object, properties: {n: {type: integer, maximum: 5}}}
)";

Result<Config> parse(const std::string& yaml) {
  return parse_config(yaml, "test.yaml", "/tmp");
}

TEST(Config, MinimalConfigAndDefaults) {
  auto c = parse(kMinimal);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->server.listen_host, "127.0.0.1");
  EXPECT_EQ(c->server.listen_port, 8750);
  EXPECT_EQ(c->storage.data_dir, "./airlock-data");
  ASSERT_EQ(c->tools.size(), 1u);
  const auto& t = c->tools[0];
  EXPECT_EQ(t.risk, Risk::medium);
  EXPECT_EQ(t.where, "test.yaml:8");
  auto limits = c->limits_for(t);
  EXPECT_EQ(limits.wall_time, std::chrono::seconds(2));  // the tool's override
  EXPECT_EQ(limits.memory_bytes, 64ULL << 20);
  EXPECT_EQ(limits.pids, default_tiers()[Risk::medium].pids);  // the tier's
  EXPECT_EQ(t.input_schema["properties"]["n"]["maximum"], 5);  // numbers stay numbers
}

TEST(Config, TheExampleConfigLoads) {
  // `make demo` runs it; the stricter rules of issue #13 must not refuse it.
  auto c = load_config(std::string(AIRLOCK_EXAMPLES_DIR) + "/airlock.yaml");
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->tools.size(), 6u);
  const auto* upload = c->find_tool("report-upload");  // demo step 7: per-call credentials
  ASSERT_NE(upload, nullptr);
  ASSERT_EQ(upload->credentials.size(), 2u);
  EXPECT_EQ(upload->credentials[0].provider(), "token");
  EXPECT_EQ(upload->credentials[1].provider(), "secret");
}

struct BadConfig {
  std::string yaml;
  std::string where;  // "test.yaml:LINE"
  std::string says;
};

class ConfigErrors : public ::testing::TestWithParam<BadConfig> {};

TEST_P(ConfigErrors, NameFileLineAndWhatWasExpected) {
  auto c = parse(GetParam().yaml);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message.rfind(GetParam().where + ":", 0), 0u) << c.error().message;
  EXPECT_NE(c.error().message.find(GetParam().says), std::string::npos) << c.error().message;
}

std::string with(const std::string& from, const std::string& to) {
  std::string s = kMinimal;
  s.replace(s.find(from), from.size(), to);
  return s;
}

INSTANTIATE_TEST_SUITE_P(
    Mistakes, ConfigErrors,
    ::testing::Values(
        BadConfig{"kind: Pod\n", "test.yaml:1", "apiVersion: expected airlock.dev/v1"},
        BadConfig{with("kind: AirlockConfig", "kind: Deployment"), "test.yaml:2",
                  "kind: expected AirlockConfig"},
        BadConfig{with("principals:", "servre: {}\nprincipals:"), "test.yaml:3",
                  "unknown field 'servre'"},
        BadConfig{with("apiKeySha256: 2c26", "apiKeySha256: secret-key-2c26"), "test.yaml:5",
                  "expected 64 hex digits"},
        BadConfig{with("risk: medium", "risk: extreme"), "test.yaml:10",
                  "expected low, medium, high or critical"},
        BadConfig{with("timeout: 2s", "timeout: soon"), "test.yaml:11", "timeout"},
        BadConfig{with("memory: 64Mi", "memory: lots"), "test.yaml:11",
                  "limits.memory: size 'lots': expected a number"},
        BadConfig{with("type: command, command: [/bin/cat]", "type: docker"), "test.yaml:9",
                  "expected python, command or python-code"},
        BadConfig{with("    risk: medium", "    risk: medium\n    network: {allow: ['bad host!']}"),
                  "test.yaml:11", "network.allow"},
        BadConfig{with("    risk: medium", "    risk: medium\n    colour: blue"), "test.yaml:11",
                  "unknown field 'colour'"},
        BadConfig{with("    risk: medium", "    risk: medium\n    env: {1BAD: x}"), "test.yaml:11",
                  "not a valid variable name"},
        BadConfig{std::string(kMinimal) +
                      "  - name: echo-json\n    runtime: {type: command, command: [/bin/true]}\n",
                  "test.yaml:13", "defined twice"},
        BadConfig{"apiVersion: airlock.dev/v1\nkind: AirlockConfig\ntools: [\n", "test.yaml:4", ""},
        BadConfig{with("name: echo-json", "name: Echo JSON"), "test.yaml:8", "lower-case"}));

// Issue #13: every error in the file, each with file:line:column, and never an abort.

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    auto end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool has(const Result<Config>& c, const std::string& text) {
  return !c.ok() && c.error().message.find(text) != std::string::npos;
}

TEST(ConfigDuplicateKeys, RiskTwiceNamesBothLines) {
  // Before: accepted, and the first (low) won.
  auto c = parse(with("    risk: medium", "    risk: low\n    risk: high"));
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message,
            "test.yaml:11:5: tools[0].risk: duplicate key 'risk' (first at line 10)");
}

TEST(ConfigDuplicateKeys, InEveryMapping) {
  for (const auto& [from, to, says] :
       std::vector<std::tuple<std::string, std::string, std::string>>{
           {"{type: object, properties", "{type: object, type: array, properties",
            "test.yaml:12:33: tools[0].inputSchema.type: duplicate key 'type'"},
           {"{n: {type: integer,", "{n: {type: integer, type: string,",
            "tools[0].inputSchema.properties.n.type: duplicate key 'type'"},
           {"    risk: medium", "    risk: medium\n    env: {A: x, A: y}",
            "test.yaml:11:17: tools[0].env.A: duplicate key 'A' (first at line 11)"},
           {"kind: AirlockConfig", "kind: AirlockConfig\nkind: AirlockConfig",
            "test.yaml:3:1: kind: duplicate key 'kind' (first at line 2)"},
       }) {
    auto c = parse(with(from, to));
    EXPECT_TRUE(has(c, says)) << (c.ok() ? "loaded" : c.error().message);
  }
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
constexpr bool kAddressSanitizer = __has_feature(address_sanitizer);
#else
constexpr bool kAddressSanitizer = false;
#endif

// 9 levels of 9 aliases: 9^9 leaves if anything expands them.
std::string billion_laughs() {
  std::string doc =
      "    outputSchema:\n      l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n";
  for (int level = 1; level <= 8; ++level) {
    std::string prev = "*l" + std::to_string(level - 1);
    doc += "      l" + std::to_string(level) + ": &l" + std::to_string(level) + " [";
    for (int i = 0; i < 9; ++i) doc += (i ? ", " : "") + prev;
    doc += "]\n";
  }
  return with("    risk: medium\n", "    risk: medium\n" + doc);
}

TEST(ConfigAliases, BillionLaughsRefusedWithoutExpanding) {
  // In a child with 512 MiB of address space: expanding the aliases would not fit.
  const std::string yaml = billion_laughs();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!kAddressSanitizer) {  // ASan reserves terabytes of shadow: the alarm alone there
      rlimit as{512ULL << 20, 512ULL << 20};
      setrlimit(RLIMIT_AS, &as);
    }
    alarm(10);  // expanding 9^9 nodes takes longer; that would fail the test too
    auto c = parse(yaml);
    _exit(has(c, "test.yaml:12:11: anchor '&l0': anchors and aliases are not allowed") ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(ConfigAliases, AnAliasAnywhereIsAnError) {
  auto c = parse(with("    tools: [\"echo-*\"]",
                      "    tools: &t [\"echo-*\"]\n  - name: b\n"
                      "    apiKeySha256: " +
                          std::string(64, 'a') + "\n    tools: *t"));
  EXPECT_TRUE(has(c, "test.yaml:6:12: anchor '&t'")) << c.error().message;
}

TEST(ConfigNesting, HundredThousandBracketsIsACleanError) {
  // Before: yaml-cpp's own DeepRecursion, reported as "bad file".
  auto c = parse(with("inputSchema: {type: object, properties: {n: {type: integer, maximum: 5}}}",
                      "inputSchema: " + std::string(100000, '[') + std::string(100000, ']')));
  ASSERT_FALSE(c.ok());
  // The root, tools and the tool are 3 levels; the 62nd '[' (column 18 + 61) is one too many.
  EXPECT_EQ(c.error().message, "test.yaml:12:79: nested more than 64 levels deep (the limit)")
      << c.error().message;
}

TEST(ConfigNesting, HundredThousandUnclosedBracketsIsACleanError) {
  auto c = parse(with("inputSchema: {type: object, properties: {n: {type: integer, maximum: 5}}}",
                      "inputSchema: " + std::string(100000, '[')));
  EXPECT_TRUE(has(c, "nested more than 64 levels deep (the limit)"))
      << (c.ok() ? "loaded" : c.error().message);
  EXPECT_EQ(c.error().message.rfind("test.yaml:12:", 0), 0u) << c.error().message;
}

TEST(ConfigNesting, DeepBlockMappingsAreACleanError) {
  std::string deep;
  for (int i = 0; i < 200; ++i) deep += std::string(6 + 2 * i, ' ') + "k:\n";
  auto c = parse(with("    risk: medium\n", "    risk: medium\n    outputSchema:\n" + deep));
  EXPECT_TRUE(has(c, "nested more than 64 levels deep")) << (c.ok() ? "loaded" : c.error().message);
}

TEST(ConfigSize, LargerThanTheLimitIsRefused) {
  auto c = parse(std::string(kMinimal) + "#" + std::string(kMaxConfigBytes, 'x') + "\n");
  EXPECT_TRUE(has(c, "test.yaml: larger than 1048576 bytes")) << (c.ok() ? "loaded" : "");
}

TEST(ConfigAllErrors, ThreeIndependentErrorsAllReportedInFileOrder) {
  // Before: only the first.
  const std::string yaml = R"(apiVersion: airlock.dev/v1
kind: AirlockConfig
principals:
  - name: agent
    apiKeySha256: not-hex
tools:
  - name: a
    runtime: {type: command, command: [/bin/cat]}
    risk: extreme
  - name: b
    runtime: {type: command, command: [/bin/true]}
    limits: {timeout: soon}
)";
  auto c = parse(yaml);
  ASSERT_FALSE(c.ok());
  auto lines = lines_of(c.error().message);
  ASSERT_EQ(lines.size(), 3u) << c.error().message;
  EXPECT_EQ(lines[0].rfind("test.yaml:5:19: principals[0].apiKeySha256: expected 64 hex", 0), 0u);
  EXPECT_EQ(lines[1].rfind("test.yaml:9:11: tool a.risk: expected low, medium", 0), 0u);
  EXPECT_EQ(lines[2].rfind("test.yaml:12:23: tool b.limits.timeout:", 0), 0u) << lines[2];
}

TEST(ConfigAllErrors, AFloodOfErrorsIsCutShort) {
  std::string yaml = "apiVersion: airlock.dev/v1\nkind: AirlockConfig\ntools:\n";
  for (int i = 0; i < 1000; ++i) yaml += "  - []\n";
  auto c = parse(yaml);
  ASSERT_FALSE(c.ok());
  auto lines = lines_of(c.error().message);
  ASSERT_EQ(lines.size(), kMaxConfigErrorsShown + 1);
  EXPECT_EQ(lines[0], "test.yaml:4:5: tools[0]: expected a mapping");
  EXPECT_EQ(lines.back(), "test.yaml: and 900 more errors");
}

TEST(ConfigListen, PortOutOfRangeIsAnErrorWithItsLine) {
  // Before: 99999 was cast to 34463 and loaded.
  auto c = parse(with("principals:", "server: {listen: 127.0.0.1:99999}\nprincipals:"));
  EXPECT_TRUE(has(c, "test.yaml:3:18: server.listen: port '99999' is not a number from 0 to 65535"))
      << (c.ok() ? "loaded" : c.error().message);
}

TEST(ConfigListen, EveryMistakeIsAnError) {
  for (const auto& [text, says] : std::vector<std::pair<std::string, std::string>>{
           {"localhost:8750", "'localhost' is not an IP address"},
           {"127.0.0.1:http", "port 'http'"},
           {"127.0.0.1", "expected HOST:PORT"},
           {"127.0.0.1:", "port ''"},
           {":8750", "'' is not an IP address"},
           {"::1:8750", "in brackets"},
           {"[::1]8750", "expected [IPv6]:PORT"},
           {"127.0.0.1:-1", "port '-1'"},
           {"127.0.0.1:0x10", "port '0x10'"},
       }) {
    auto l = parse_listen(text);
    EXPECT_FALSE(l.ok()) << text;
    if (!l.ok()) {
      EXPECT_NE(l.error().message.find(says), std::string::npos) << l.error().message;
    }
  }
  auto v6 = parse_listen("[::1]:8750");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, 8750);
  auto any = parse_listen("0.0.0.0:0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->port, 0);
}

TEST(ConfigCommand, MissingProgramIsAnErrorAtTheCommandLine) {
  // Before: loaded; every call then failed in the sandbox.
  auto absolute = parse(with("command: [/bin/cat]", "command: [/no/such/program]"));
  EXPECT_TRUE(has(absolute,
                  "test.yaml:9:39: tool echo-json.runtime.command: program "
                  "'/no/such/program' cannot run in the sandbox"))
      << (absolute.ok() ? "loaded" : absolute.error().message);
  auto bare = parse(with("command: [/bin/cat]", "command: [nosuchprogram]"));
  EXPECT_TRUE(has(bare,
                  "test.yaml:9:39: tool echo-json.runtime.command: program 'nosuchprogram' "
                  "is not on the sandbox's PATH (looked for /usr/local/bin/nosuchprogram, "
                  "/usr/bin/nosuchprogram, /bin/nosuchprogram)"))
      << (bare.ok() ? "loaded" : bare.error().message);
}

TEST(ConfigCommand, ProgramOutsideTheSandboxNeedsADataPath) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("airlock-policy-test-" + std::to_string(getpid()));
  fs::create_directories(dir);
  const std::string program = (dir / "tool").string();
  std::ofstream(program) << "#!/bin/sh\n";
  ::chmod(program.c_str(), 0755);
  auto outside = parse(with("command: [/bin/cat]", "command: [" + program + "]"));
  EXPECT_TRUE(has(outside, "outside what the sandbox sees")) << (outside.ok() ? "loaded" : "");
  auto bound = parse(with("command: [/bin/cat]", "command: [" + program + "]}\n    dataPaths: [" +
                                                     dir.string() + "]\n    x: {"));
  EXPECT_TRUE(has(bound, "unknown field 'x'")) << (bound.ok() ? "loaded" : bound.error().message);
  EXPECT_FALSE(has(bound, "program")) << bound.error().message;
  ::chmod(program.c_str(), 0644);
  auto not_executable =
      parse(with("command: [/bin/cat]",
                 "command: [" + program + "]}\n    dataPaths: [" + dir.string() + "]\n    x: {"));
  EXPECT_TRUE(has(not_executable, "not executable")) << not_executable.error().message;
  fs::remove_all(dir);
}

TEST(ConfigCommand, ProgramsTheSandboxHasLoad) {
  for (const char* command : {"[/bin/cat]", "[cat]", "[/usr/bin/env, cat]", "[sh, -c, 'cat']"}) {
    auto c = parse(with("command: [/bin/cat]", std::string("command: ") + command));
    EXPECT_TRUE(c.ok()) << command << ": " << c.error().message;
  }
  auto own_path = parse(with("    risk: medium", "    risk: medium\n    env: {PATH: /nowhere}"));
  EXPECT_TRUE(own_path.ok()) << "an absolute program ignores PATH";
  auto on_own_path =
      parse(with("command: [/bin/cat]", "command: [cat]}\n    env: {PATH: /nowhere}\n    x: {"));
  EXPECT_TRUE(has(on_own_path, "looked for /nowhere/cat")) << on_own_path.error().message;
}

TEST(ConfigCommand, InterpreterIsLookedUpToo) {
  auto c =
      parse(with("type: command, command: [/bin/cat]", "type: python-code, interpreter: python9"));
  EXPECT_TRUE(has(c, "test.yaml:9:47: tool echo-json.runtime.interpreter: program 'python9'"))
      << (c.ok() ? "loaded" : c.error().message);
  auto ok = parse(with("type: command, command: [/bin/cat]", "type: python-code"));
  EXPECT_TRUE(ok.ok()) << ok.error().message;
}

// Issue #15: server.tls and principals[].certificate.

class ConfigTls : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "airlock-tls-cfg-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir = tmpl;
    for (const char* f : {"server.pem", "server.key", "ca.pem"}) std::ofstream(dir + "/" + f) << "x";
  }
  void TearDown() override { std::filesystem::remove_all(dir); }

  // The minimal config with `server` (a line 3) and a principal block in place of agent's.
  Result<Config> parse_with(const std::string& server, const std::string& principal) {
    std::string yaml = "apiVersion: airlock.dev/v1\nkind: AirlockConfig\n" + server +
                       "\nprincipals:\n  - name: agent\n" + principal + "    tools: [\"*\"]\n";
    return parse_config(yaml, "test.yaml", dir);
  }

  std::string dir;
  const std::string key_line =
      "    apiKeySha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae\n";
  const std::string mtls =
      "server: {tls: {certFile: server.pem, keyFile: server.key, clientCAFile: ca.pem}}";
};

TEST_F(ConfigTls, TlsAndCertificatePrincipalsParse) {
  auto c = parse_with(mtls, "    certificate: {uriSAN: \"spiffe://example.org/agents/research\"}\n");
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_TRUE(c->server.tls.has_value());
  EXPECT_EQ(c->server.tls->cert_file, dir + "/server.pem");  // against the config's directory
  EXPECT_EQ(c->server.tls->key_file, dir + "/server.key");
  EXPECT_EQ(c->server.tls->client_ca_file, dir + "/ca.pem");
  ASSERT_TRUE(c->principals[0].certificate.has_value());
  EXPECT_EQ(c->principals[0].certificate->uri_san, "spiffe://example.org/agents/research");
  EXPECT_EQ(c->principals[0].certificate->subject, "");
  EXPECT_EQ(c->principals[0].api_key_sha256, "");

  auto both = parse_with(mtls, key_line + "    certificate: {subject: \"CN=research-agent,O=agents\"}\n");
  ASSERT_TRUE(both.ok()) << both.error().message;
  EXPECT_EQ(both->principals[0].certificate->subject, "CN=research-agent,O=agents");
  EXPECT_FALSE(both->principals[0].api_key_sha256.empty());

  auto no_ca = parse_with("server: {tls: {certFile: server.pem, keyFile: server.key}}", key_line);
  ASSERT_TRUE(no_ca.ok()) << no_ca.error().message;
  EXPECT_EQ(no_ca->server.tls->client_ca_file, "");
  EXPECT_FALSE(parse_with("server: {}", key_line)->server.tls.has_value());
}

TEST_F(ConfigTls, MissingCertFileIsAnErrorAtItsLine) {
  auto c = parse_with("server: {tls: {certFile: nothere.pem, keyFile: server.key}}", key_line);
  EXPECT_TRUE(has(c, "test.yaml:3:26: server.tls.certFile: " + dir + "/nothere.pem is not a file"))
      << (c.ok() ? "loaded" : c.error().message);
  auto missing = parse_with("server: {tls: {keyFile: server.key}}", key_line);
  EXPECT_TRUE(has(missing, "test.yaml:3:15: server.tls: missing certFile"))
      << (missing.ok() ? "loaded" : missing.error().message);
  auto typo = parse_with("server: {tls: {certFile: server.pem, keyFile: server.key, caFile: ca.pem}}",
                         key_line);
  EXPECT_TRUE(has(typo, "server.tls: unknown field 'caFile'"));
}

TEST_F(ConfigTls, AnUnreadableFileIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  ::chmod((dir + "/server.key").c_str(), 0);
  auto c = parse_with("server: {tls: {certFile: server.pem, keyFile: server.key}}", key_line);
  EXPECT_TRUE(has(c, "test.yaml:3:46: server.tls.keyFile: " + dir + "/server.key cannot be read"))
      << (c.ok() ? "loaded" : c.error().message);
}

TEST_F(ConfigTls, CertificateWithoutClientCaFileIsRefused) {
  const std::string cert = "    certificate: {subject: \"CN=a\"}\n";
  for (const std::string& server :
       {std::string("server: {}"),
        std::string("server: {tls: {certFile: server.pem, keyFile: server.key}}")}) {
    auto c = parse_with(server, cert);
    EXPECT_TRUE(has(c, "test.yaml:6:18: certificate: needs server.tls.clientCAFile"))
        << server << ": " << (c.ok() ? "loaded" : c.error().message);
  }
}

TEST_F(ConfigTls, PrincipalWithNeitherKeyNorCertificateIsRefused) {
  auto c = parse_with(mtls, "");
  EXPECT_TRUE(has(c, "test.yaml:5:5: principals[0]: missing apiKeySha256"))
      << (c.ok() ? "loaded" : c.error().message);
  EXPECT_TRUE(has(c, "or certificate"));
}

TEST_F(ConfigTls, CertificateMatchMistakes) {
  for (const auto& [block, says] : std::vector<std::pair<std::string, std::string>>{
           {"{subject: \"CN=a\", uriSAN: \"spiffe://x/y\"}", "expected exactly one of subject"},
           {"{}", "expected exactly one of subject"},
           {"{subject: \"\"}", "certificate.subject: must not be empty"},
           {"{uri: \"spiffe://x/y\"}", "unknown field 'uri'"},
           {"CN=a", "expected a mapping"},
       }) {
    auto c = parse_with(mtls, "    certificate: " + block + "\n");
    EXPECT_TRUE(has(c, says)) << block << ": " << (c.ok() ? "loaded" : c.error().message);
  }
}

TEST_F(ConfigTls, TwoPrincipalsWithTheSameCertificateAreRefused) {
  auto c = parse_with(mtls, "    certificate: {uriSAN: \"spiffe://x/y\"}\n    tools: []\n"
                            "  - name: twin\n    certificate: {uriSAN: \"spiffe://x/y\"}\n");
  EXPECT_TRUE(has(c, "two principals match the same certificate"))
      << (c.ok() ? "loaded" : c.error().message);
}

TEST(Globs, MatchToolNames) {
  EXPECT_TRUE(glob_match("echo-*", "echo-json"));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("a?c", "abc"));
  EXPECT_FALSE(glob_match("echo-*", "echo"));
  EXPECT_FALSE(glob_match("echo", "echo-json"));
  EXPECT_TRUE(glob_match("*-json", "echo-json"));
  EXPECT_FALSE(glob_match("", "x"));
}

}  // namespace
}  // namespace airlock::policy
