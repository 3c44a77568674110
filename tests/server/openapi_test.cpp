// The OpenAPI document stays true: every operation it documents is served, every answer the
// server gives (for every status it documents) validates against the documented schema, and
// nothing is served that it does not document.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>

#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validator.hpp>

#include "server/api/api.hpp"
#include "server_test_support.hpp"

namespace airlock::server::test {
namespace {

class OpenApi {
 public:
  OpenApi() : doc_(nlohmann::json::parse(openapi_document())) {}
  const nlohmann::json& doc() const { return doc_; }

  // The schema documented for path/method/status (content application/json), or null.
  nlohmann::json response_schema(const std::string& path, const std::string& method, int status) const {
    const auto& op = doc_["paths"][path][method];
    nlohmann::json resp = op["responses"][std::to_string(status)];
    if (resp.contains("$ref")) resp = resolve(resp["$ref"].get<std::string>());
    if (!resp.contains("content") || !resp["content"].contains("application/json")) return nullptr;
    return resp["content"]["application/json"]["schema"];
  }

  bool documents(const std::string& path, const std::string& method, int status) const {
    return doc_["paths"].contains(path) && doc_["paths"][path].contains(method) &&
           doc_["paths"][path][method]["responses"].contains(std::to_string(status));
  }

  // Whether path/method/status documents an answer of this media type (a file's content).
  bool documents_content(const std::string& path, const std::string& method, int status,
                         const std::string& media_type) const {
    nlohmann::json resp = doc_["paths"][path][method]["responses"][std::to_string(status)];
    if (resp.contains("$ref")) resp = resolve(resp["$ref"].get<std::string>());
    return resp.contains("content") && resp["content"].contains(media_type);
  }

  // Validates `body` against `schema`, with $refs resolved inside the document.
  std::string check(const nlohmann::json& schema, const nlohmann::json& body) const {
    nlohmann::json root = doc_;  // refs are "#/components/..." into the document
    root["$ref"] = "#/x-under-test";
    root["x-under-test"] = schema;
    valijson::Schema compiled;
    valijson::SchemaParser parser;
    valijson::adapters::NlohmannJsonAdapter schema_adapter(root);
    parser.populateSchema(schema_adapter, compiled);
    valijson::Validator validator;
    valijson::ValidationResults results;
    valijson::adapters::NlohmannJsonAdapter target(body);
    if (validator.validate(compiled, target, &results)) return "";
    std::string why;
    valijson::ValidationResults::Error e;
    while (results.popError(e)) {
      std::string where;
      for (const auto& c : e.context) where += c;
      why += where + ": " + e.description + "\n";
    }
    return why;
  }

 private:
  nlohmann::json resolve(const std::string& ref) const {
    return doc_.at(nlohmann::json::json_pointer(ref.substr(1)));
  }
  nlohmann::json doc_;
};

struct Call {
  std::string documented_path;
  std::string method;
  std::string target;
  std::string body;
  std::string key;
  std::map<std::string, std::string> headers = {};
};

TEST(OpenApiDocument, EveryAnswerMatchesItsDocumentedSchema) {
  OpenApi api;
  Workspace ws("server: {listen: 127.0.0.1:0, maxBodyBytes: 4Ki}", "\nsessionTemplates:\n  - name: dev\n");
  RunningDaemon d(ws);
  auto first = invoke(d.port, "echo", {{"n", 1}}).json();
  const std::string id = first["id"];
  const std::string session = http(d.port, "POST", "/v1/sessions", R"({"template": "dev"})").json()["id"];
  const std::string session_path = "/v1/sessions/" + session;
  const std::string files = "/v1/sessions/{id}/files/{path}";
  const std::string snapshot_of = "/v1/sessions/{id}/snapshot";
  const std::string snapshot = http(d.port, "POST", session_path + "/snapshot").json()["id"];
  const std::string snapshot_path = "/v1/snapshots/" + snapshot;
  const std::string from_snapshot = nlohmann::json{{"fromSnapshot", snapshot}}.dump();
  const std::map<std::string, std::string> json_accept = {{"Accept", "application/json"}};
  const std::map<std::string, std::string> websocket = {{"Upgrade", "websocket"}, {"Connection", "Upgrade"},
                                                        {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                                                        {"Sec-WebSocket-Version", "13"}};
  const std::string invoke_path = "/v1/tools/{name}/invoke";
  const std::string ok_body = nlohmann::json{{"arguments", {{"n", 1}}}}.dump();
  const std::string rejected_code =
      nlohmann::json{{"arguments", {{"code", "import os\nexec('1')"}}}}.dump();
  const std::string token_form =
      "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
      "&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt&subject_token=a.b.c";
  const std::string mcp_initialize =
      R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}})";
  const std::map<std::string, std::string> mcp_accept = {{"Accept", "application/json, text/event-stream"}};
  const std::vector<Call> calls = {
      {invoke_path, "post", "/v1/tools/echo/invoke", ok_body, kKey},                  // 200 ok
      {invoke_path, "post", "/v1/tools/crash/invoke", ok_body, kKey},                 // 200 error
      {invoke_path, "post", "/v1/tools/echo/invoke", "{bad json", kKey},              // 400
      {invoke_path, "post", "/v1/tools/echo/invoke", ok_body, ""},                    // 401
      {invoke_path, "post", "/v1/tools/crash/invoke", ok_body, kOtherKey},            // 403
      {invoke_path, "post", "/v1/tools/nope/invoke", ok_body, kKey},                  // 404
      {invoke_path, "post", "/v1/tools/echo/invoke", std::string(8000, 'x'), kKey},   // 413
      {invoke_path, "post", "/v1/tools/launch-codes/invoke", ok_body, kKey},          // 403 tier
      {invoke_path, "post", "/v1/tools/run-python/invoke", rejected_code, kKey},      // 422
      {"/v1/tools", "get", "/v1/tools", "", kKey},
      {"/v1/tools", "get", "/v1/tools", "", ""},
      {"/v1/tools/{name}", "get", "/v1/tools/echo", "", kKey},
      {"/v1/tools/{name}", "get", "/v1/tools/crash", "", kOtherKey},
      {"/v1/tools/{name}", "get", "/v1/tools/nope", "", kKey},
      {"/v1/invocations", "get", "/v1/invocations?tool=echo&limit=5", "", kKey},          // 200
      {"/v1/invocations", "get", "/v1/invocations?status=nope", "", kKey},              // 400
      {"/v1/invocations", "get", "/v1/invocations", "", ""},                            // 401
      {"/v1/invocations/{id}", "get", "/v1/invocations/" + id, "", kKey},
      {"/v1/invocations/{id}", "get", "/v1/invocations/nope", "", kKey},
      {"/v1/approvals", "get", "/v1/approvals", "", kKey},                            // 200 (none)
      {"/v1/approvals", "get", "/v1/approvals", "", ""},                              // 401
      {"/v1/approvals/{id}", "get", "/v1/approvals/apr-nope", "", kKey},              // 404
      {"/v1/approvals/{id}", "get", "/v1/approvals/apr-nope", "", ""},                // 401
      {"/v1/approvals/{id}/approve", "post", "/v1/approvals/apr-nope/approve", "{}", kKey},   // 404
      {"/v1/approvals/{id}/approve", "post", "/v1/approvals/apr-nope/approve", "[", kKey},    // 400
      {"/v1/approvals/{id}/approve", "post", "/v1/approvals/apr-nope/approve", "{}", ""},     // 401
      {"/v1/approvals/{id}/deny", "post", "/v1/approvals/apr-nope/deny", "{}", kKey},         // 404
      {"/v1/approvals/{id}/deny", "post", "/v1/approvals/apr-nope/deny", "{}", ""},           // 401
      {"/v1/audit/checkpoint", "get", "/v1/audit/checkpoint", "", kKey},
      {"/v1/audit/verify", "get", "/v1/audit/verify", "", kKey},
      {"/v1/audit/verify", "get", "/v1/audit/verify", "", ""},                          // 401
      {"/v1/audit/proof/{index}", "get", "/v1/audit/proof/0", "", kKey},
      {"/v1/audit/proof/{index}", "get", "/v1/audit/proof/x", "", kKey},
      {"/v1/audit/proof/{index}", "get", "/v1/audit/proof/999", "", kKey},
      {"/v1/token", "post", "/v1/token", "grant_type=x", kKey},                       // 400: not a form
      {"/v1/token", "post", "/v1/token", "grant_type=client_credentials", kKey,
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 400 unsupported_grant_type
      {"/v1/token", "post", "/v1/token", token_form, "not-a-key",
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 401 invalid_client
      {"/v1/token", "post", "/v1/token", token_form, kKey,
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 400 invalid_grant
      {"/v1/token/introspect", "post", "/v1/token/introspect", "token=a.b.c", kKey,
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 200 inactive
      {"/v1/token/introspect", "post", "/v1/token/introspect", "token_type_hint=x", kKey,
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 400 no token
      {"/v1/token/introspect", "post", "/v1/token/introspect", "token=a.b.c", "",
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 401
      {"/v1/token/revoke", "post", "/v1/token/revoke", "token=a.b.c", kKey,
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 200 nothing to revoke
      {"/v1/token/revoke", "post", "/v1/token/revoke", "token=a.b.c", kKey},      // 400 not a form
      {"/v1/token/revoke", "post", "/v1/token/revoke", "token=a.b.c", "",
       {{"Content-Type", "application/x-www-form-urlencoded"}}},                   // 401
      {"/.well-known/jwks.json", "get", "/.well-known/jwks.json", "", ""},
      {"/healthz", "get", "/healthz", "", ""},
      {"/healthz", "head", "/healthz", "", ""},
      {"/metrics", "get", "/metrics", "", ""},
      {"/openapi.json", "get", "/openapi.json", "", ""},
      {"/mcp", "post", "/mcp", mcp_initialize, kKey, mcp_accept},                     // 200
      {"/mcp", "post", "/mcp", R"({"jsonrpc":"2.0","method":"notifications/initialized"})", kKey, mcp_accept},  // 400 no session
      {"/mcp", "post", "/mcp", "[" + mcp_initialize + "]", kKey, mcp_accept},         // 400 batch
      {"/mcp", "post", "/mcp", mcp_initialize, "", mcp_accept},                       // 401
      {"/mcp", "post", "/mcp", mcp_initialize, kKey, {{"Accept", "text/event-stream"}, {"Origin", "http://evil.example"}}},  // 403
      {"/mcp", "post", "/mcp", mcp_initialize, kKey, {{"Accept", "text/event-stream"}}},  // 406
      {"/mcp", "post", "/mcp", std::string(8000, 'x'), kKey, mcp_accept},             // 413
      {"/mcp", "post", "/mcp", mcp_initialize, kKey, {{"Accept", "*/*"}, {"Content-Type", "text/plain"}}},  // 415
      {"/mcp", "get", "/mcp", "", kKey},                                              // 405
      {"/mcp", "delete", "/mcp", "", kKey, {{"Mcp-Session-Id", "nope"}}},             // 404
      {"/mcp", "delete", "/mcp", "", kKey},                                           // 400
      {"/.well-known/oauth-protected-resource", "get", "/.well-known/oauth-protected-resource", "", ""},
      {"/.well-known/oauth-protected-resource/mcp", "get", "/.well-known/oauth-protected-resource/mcp", "", ""},
      {"/v1/sessions", "post", "/v1/sessions", R"({"template": "dev"})", kKey},          // 201
      {"/v1/sessions", "post", "/v1/sessions", "[", kKey},                               // 400
      {"/v1/sessions", "post", "/v1/sessions", R"({"template": "dev"})", ""},            // 401
      {"/v1/sessions", "post", "/v1/sessions", R"({"template": "dev"})", kOtherKey},     // 403
      {"/v1/sessions", "post", "/v1/sessions", R"({"template": "nope"})", kKey},         // 404
      {"/v1/sessions", "get", "/v1/sessions", "", kKey},                                 // 200
      {"/v1/sessions", "get", "/v1/sessions", "", ""},                                   // 401
      {"/v1/sessions/{id}", "get", session_path, "", kKey},                              // 200
      {"/v1/sessions/{id}", "get", session_path, "", kOtherKey},                         // 404: not its owner
      {"/v1/sessions/{id}/exec", "post", session_path + "/exec", R"({"command": "echo hi"})", kKey, json_accept},  // 200
      {"/v1/sessions/{id}/exec", "post", session_path + "/exec", R"({"command": []})", kKey, json_accept},         // 400
      {"/v1/sessions/{id}/exec", "post", session_path + "/exec", R"({"command": ["/no/such"]})", kKey, json_accept},  // 422
      {"/v1/sessions/{id}/exec", "post", "/v1/sessions/nope/exec", R"({"command": "true"})", kKey, json_accept},  // 404
      {"/v1/sessions/{id}/code", "post", session_path + "/code", R"({"code": "x = 6\nx * 7"})", kKey},  // 200: ok
      {"/v1/sessions/{id}/code", "post", session_path + "/code", R"({"code": "1 / 0"})", kKey},        // 200: exception
      {"/v1/sessions/{id}/code", "post", session_path + "/code", R"j({"code": "eval('1')"})j", kKey},    // 422: rejected
      {"/v1/sessions/{id}/code", "post", session_path + "/code", R"({"cell": "1"})", kKey},            // 400
      {"/v1/sessions/{id}/code", "post", "/v1/sessions/nope/code", R"({"code": "1"})", kKey},          // 404
      {"/v1/sessions/{id}/code/interrupt", "post", session_path + "/code/interrupt", "", kKey},        // 200
      {"/v1/sessions/{id}/code/interrupt", "post", "/v1/sessions/nope/code/interrupt", "", kKey},      // 404
      {"/v1/sessions/{id}/terminal", "get", session_path + "/terminal", "", kKey},                // 426 not an upgrade
      {"/v1/sessions/{id}/terminal", "get", session_path + "/terminal?rows=0", "", kKey, websocket},  // 400
      {"/v1/sessions/{id}/terminal", "get", "/v1/sessions/nope/terminal", "", kKey, websocket},   // 404
      {"/v1/sessions/{id}/terminal", "get", session_path + "/terminal", "", "", websocket},       // 401
      {files, "put", session_path + "/files/notes/a.txt", "hello", kKey},                 // 200 a file
      {files, "put", session_path + "/files/notes/empty/", "", kKey},                     // 200 a directory
      {files, "put", session_path + "/files/notes/a.txt/b.txt", "x", kKey},               // 409 not_a_directory
      {files, "put", session_path + "/files/../../etc/passwd", "x", kKey},                // 403 (or 400)
      {files, "put", "/v1/sessions/nope/files/a.txt", "x", kKey},                         // 404
      {files, "put", session_path + "/files/a.txt", "x", ""},                             // 401
      {files, "get", session_path + "/files/notes/a.txt", "", kKey},                      // 200 the content
      {files, "get", session_path + "/files/notes", "", kKey},                            // 200 a listing
      {files, "get", session_path + "/files/", "", kKey},                                 // 200 the workspace
      {files, "get", session_path + "/files/nope.txt", "", kKey},                         // 404 file_not_found
      {files, "get", session_path + "/files/../../etc/passwd", "", kKey},                 // 403 (or 400)
      {files, "get", session_path + "/files/notes/a.txt", "", kOtherKey},                 // 404: not its owner
      {files, "get", session_path + "/files/notes", "", ""},                              // 401
      {files, "delete", session_path + "/files/notes", "", kKey},                         // 409 directory_not_empty
      {files, "delete", session_path + "/files/notes/a.txt", "", kKey},                   // 200
      {files, "delete", session_path + "/files/notes/a.txt", "", kKey},                   // 404 file_not_found
      {files, "delete", session_path + "/files/../../etc/passwd", "", kKey},              // 403 (or 400)
      {files, "delete", session_path + "/files/notes/empty", "", ""},                     // 401
      {snapshot_of, "post", session_path + "/snapshot", R"({"retention": "1h"})", kKey},  // 201
      {snapshot_of, "post", session_path + "/snapshot", R"({"retention": "90d"})", kKey},  // 400
      {snapshot_of, "post", session_path + "/snapshot", "", kOtherKey},                    // 404: not its owner
      {snapshot_of, "post", session_path + "/snapshot", "", ""},                           // 401
      {"/v1/snapshots", "get", "/v1/snapshots", "", kKey},                                 // 200
      {"/v1/snapshots", "get", "/v1/snapshots", "", ""},                                   // 401
      {"/v1/snapshots/{id}", "get", snapshot_path, "", kKey},                              // 200
      {"/v1/snapshots/{id}", "get", snapshot_path, "", kOtherKey},                         // 404: not its owner
      {"/v1/snapshots/{id}", "get", snapshot_path, "", ""},                                // 401
      {"/v1/sessions", "post", "/v1/sessions", from_snapshot, kKey},                       // 201 a fork
      {"/v1/sessions", "post", "/v1/sessions", from_snapshot, kOtherKey},                  // 404: not its owner
      {"/v1/sessions", "post", "/v1/sessions", R"({"template": "other", "fromSnapshot": ")" + snapshot + R"("})",
       kKey},                                                                              // 400: not its template
      {"/v1/snapshots/{id}", "delete", snapshot_path, "", kOtherKey},                      // 404: not its owner
      {"/v1/snapshots/{id}", "delete", snapshot_path, "", ""},                             // 401
      {"/v1/snapshots/{id}", "delete", snapshot_path, "", kKey},                           // 200
      {"/v1/snapshots/{id}", "delete", snapshot_path, "", kKey},                           // 404: deleted
      {"/v1/sessions", "post", "/v1/sessions", from_snapshot, kKey},                       // 404: deleted
      {"/v1/sessions/{id}/pause", "post", session_path + "/pause", "", kKey},            // 200
      {"/v1/sessions/{id}/pause", "post", session_path + "/pause", "", kKey},            // 409: paused
      {files, "put", session_path + "/files/late.txt", "x", kKey},                        // 409 session_paused
      {snapshot_of, "post", session_path + "/snapshot", "", kKey},                         // 409 session_paused
      {"/v1/sessions/{id}/pause", "post", "/v1/sessions/nope/pause", "", kKey},          // 404
      {"/v1/sessions/{id}/resume", "post", session_path + "/resume", "", kKey},          // 200
      {"/v1/sessions/{id}/resume", "post", session_path + "/resume", "", kKey},          // 409: not paused
      {"/v1/sessions/{id}", "delete", session_path, "", kKey},                           // 200
      {"/v1/sessions/{id}", "delete", session_path, "", kKey},                           // 404: ended
  };
  std::set<std::pair<std::string, std::string>> exercised;
  for (const auto& c : calls) {
    std::string method = c.method;
    std::transform(method.begin(), method.end(), method.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    auto reply = c.headers.empty() ? http(d.port, method, c.target, c.body, c.key)
                                   : http_with(d.port, method, c.target, c.body, c.key, c.headers);
    SCOPED_TRACE(c.method + " " + c.target + " -> " + std::to_string(reply.status) + " " + reply.body.substr(0, 300));
    ASSERT_TRUE(api.documents(c.documented_path, c.method, reply.status)) << "undocumented status";
    // A file's content (GET .../files/{path}) is checked to be documented, not parsed as JSON.
    const bool file_content = reply.headers.count("content-type") &&
                              reply.headers.at("content-type").rfind("application/octet-stream", 0) == 0;
    if (file_content) {
      EXPECT_TRUE(api.documents_content(c.documented_path, c.method, reply.status, "application/octet-stream"));
    }
    auto schema = file_content ? nlohmann::json() : api.response_schema(c.documented_path, c.method, reply.status);
    if (!schema.is_null()) {
      auto body = reply.json();
      ASSERT_FALSE(body.is_discarded()) << "not JSON";
      EXPECT_EQ(api.check(schema, body), "");
    }
    exercised.insert({c.documented_path, c.method});
  }
  // Every documented operation was exercised (a new endpoint needs a line above).
  for (const auto& [path, item] : api.doc()["paths"].items())
    for (const auto& [method, op] : item.items())
      EXPECT_TRUE(exercised.count({path, method})) << method << " " << path << " is documented but not tested";
}

TEST(OpenApiDocument, TheCheckerItselfRejectsAWrongShape) {
  // A test that cannot fail is a defect: the checker must see a broken response.
  OpenApi api;
  auto schema = api.response_schema("/v1/tools/{name}/invoke", "post", 200);
  EXPECT_NE(api.check(schema, {{"id", "x"}, {"status", "fine"}}), "");
  EXPECT_NE(api.check(schema, nlohmann::json::array()), "");
}

TEST(OpenApiDocument, UndocumentedPathsAreNotServed) {
  Workspace ws;
  RunningDaemon d(ws);
  for (const char* target : {"/v1", "/v1/secret", "/v2/tools", "/v1/tools/echo/invoke/again", "/admin"})
    EXPECT_EQ(http(d.port, "GET", target).status, 404) << target;
}

}  // namespace
}  // namespace airlock::server::test
