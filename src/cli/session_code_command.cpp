// airlock session code ID [FILE | -] [-c CODE] [--timeout 30s] [--images DIR] | interrupt ID:
// a cell of Python in a session's code interpreter (docs/sessions.md, "Code"). The cell's
// stdout and its result's repr go to stdout; its stderr, its error's traceback and what the
// daemon has to say to stderr. ^C while the cell runs interrupts it (the interpreter keeps its
// state); a second ^C leaves without waiting. Exit status: 0 the cell ran, 1 it raised, 124 past
// its timeout, 125 it did not run to an end (refused, the interpreter lost, output over the
// limit, DLP), 2 the request failed.
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <future>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/daemon_client.hpp"
#include "common/base64.hpp"
#include "common/percent_encoding.hpp"

namespace airlock::cli {
namespace {

namespace http = boost::beast::http;

struct CodeOptions {
  ClientOptions client;
  std::string id, file, code, timeout, images_dir;
  bool json = false;
};

// The cell's source: -c CODE, else FILE, else stdin ("-" or none).
std::optional<std::string> cell_source(const CodeOptions& o) {
  if (!o.code.empty()) {
    if (!o.file.empty()) {
      std::cerr << "airlock session code: give the code as -c CODE or as FILE, not both\n";
      return std::nullopt;
    }
    return o.code;
  }
  std::ifstream file;
  if (!o.file.empty() && o.file != "-") {
    file.open(o.file, std::ios::binary);
    if (!file) {
      std::cerr << "airlock session code: cannot read " << o.file << ": " << std::strerror(errno) << "\n";
      return std::nullopt;
    }
  }
  std::istream& in = file.is_open() ? static_cast<std::istream&>(file) : std::cin;
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Sends the cell and waits for its answer; a SIGINT meanwhile asks the daemon to interrupt the
// cell (POST .../code/interrupt) and the answer is still awaited, a second one stops waiting.
Result<Reply> send_interruptibly(const CodeOptions& o, const std::string& body) {
  sigset_t interrupt;
  sigemptyset(&interrupt);
  sigaddset(&interrupt, SIGINT);
  pthread_sigmask(SIG_BLOCK, &interrupt, nullptr);  // the request's thread inherits the mask
  auto answer = std::async(std::launch::async, [&] {
    return request(o.client, http::verb::post, "/v1/sessions/" + percent_encode(o.id) + "/code", body);
  });
  int interrupts = 0;
  const timespec tick{0, 50'000'000};
  while (answer.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    if (sigtimedwait(&interrupt, nullptr, &tick) != SIGINT) continue;
    if (++interrupts > 1) {
      std::cerr << "airlock session code: not waiting for the cell's answer (it was asked to stop)\n";
      std::_Exit(130);  // the request's thread is blocked in a read: nothing to unwind
    }
    auto stopped = request(o.client, http::verb::post, "/v1/sessions/" + percent_encode(o.id) + "/code/interrupt", "");
    std::cerr << "airlock session code: "
              << (stopped && stopped->status == 200 ? "interrupting the cell (^C again to stop waiting)"
                                                    : "the interrupt was not delivered")
              << "\n";
  }
  pthread_sigmask(SIG_UNBLOCK, &interrupt, nullptr);
  return answer.get();
}

// Writes the cell's figures as DIR/<invocation>-<n>.png, or says they were not shown.
void save_images(const CodeOptions& o, const nlohmann::json& answer) {
  const auto images = answer.value("images", nlohmann::json::array());
  if (images.empty()) return;
  if (o.images_dir.empty()) {
    std::cerr << "airlock session code: " << images.size() << " figure(s) not shown (--images DIR writes them)\n";
    return;
  }
  for (std::size_t i = 0; i < images.size(); ++i) {
    auto png = base64_decode(images[i].value("data", ""));
    const std::string path = o.images_dir + "/" + answer.value("invocation_id", "cell") + "-" + std::to_string(i) + ".png";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (png && out.write(png->data(), static_cast<std::streamsize>(png->size())))
      std::cerr << "figure: " << path << "\n";
    else
      std::cerr << "airlock session code: could not write " << path << "\n";
  }
}

// The answer as a notebook shows it: output, then the value or the error.
void print_cell(const CodeOptions& o, const nlohmann::json& j) {
  std::cout << j.value("stdout", "");
  std::cerr << j.value("stderr", "");
  if (auto r = j.find("result"); r != j.end() && r->is_object()) std::cout << r->value("repr", "") << "\n";
  if (auto e = j.find("error"); e != j.end() && e->is_object())
    for (const auto& line : e->value("traceback", nlohmann::json::array()))
      if (line.is_string()) std::cerr << line.get<std::string>() << "\n";
  for (const auto& f : j.value("dlp_findings", nlohmann::json::array()))
    std::cerr << "airlock session code: DLP found " << f.value("detector", "?") << " at line " << f.value("line", 0)
              << " of the code (it ran as written)\n";
  if (j.contains("message")) std::cerr << "airlock session code: " << j.value("message", "") << "\n";
  save_images(o, j);
}

int run_cell(CodeOptions& o) {
  auto source = cell_source(o);
  if (!source) return 2;
  nlohmann::json body = {{"code", *source}};
  if (!o.timeout.empty()) body["timeout"] = o.timeout;
  key_from_environment(o.client);
  auto reply = send_interruptibly(o, body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  if (!reply) {
    std::cerr << "airlock session code: " << reply.error().message << "\n";
    return 2;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 || !j.is_object()) {
    std::cerr << "airlock session code: HTTP " << reply->status << ": " << reply->body << "\n";
    return 125;
  }
  if (o.json) std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  else print_cell(o, j);
  const std::string verdict = j.value("verdict", "");
  return verdict == "ok" ? 0 : verdict == "exception" ? 1 : verdict == "timeout" ? 124 : 125;
}

int interrupt(CodeOptions& o) {
  key_from_environment(o.client);
  auto reply = request(o.client, http::verb::post, "/v1/sessions/" + percent_encode(o.id) + "/code/interrupt", "");
  if (!reply) {
    std::cerr << "airlock session interrupt: " << reply.error().message << "\n";
    return 2;
  }
  auto j = nlohmann::json::parse(reply->body, nullptr, false);
  if (reply->status != 200 || !j.is_object()) {
    std::cerr << "airlock session interrupt: HTTP " << reply->status << ": " << reply->body << "\n";
    return 1;
  }
  std::cout << (j.value("interrupted", false) ? "interrupted\n" : "no cell was running\n");
  return 0;
}

CLI::App* with_code_options(CLI::App* cmd, CodeOptions& o) {
  add_client_options(cmd, o.client);
  cmd->add_option("--subject-token", o.client.subject_token, "The user the agent acts for (Airlock-Subject-Token)");
  cmd->add_option("id", o.id, "The session's id")->required();
  return cmd;
}

}  // namespace

void add_session_code_commands(CLI::App& session, ExitStatus& status) {
  auto o = std::make_shared<CodeOptions>();
  auto* code_cmd = with_code_options(
      session.add_subcommand("code", "Run a cell of Python in a session's interpreter (its variables stay for the next)"), *o);
  code_cmd->add_option("file", o->file, "The cell's code (default, or '-': stdin)");
  code_cmd->add_option("-c,--code", o->code, "The cell's code as an argument");
  code_cmd->add_option("--timeout", o->timeout, "How long it may run (30s); past it the interpreter and its state go");
  code_cmd->add_option("--images", o->images_dir, "Write the cell's figures (PNG) into this directory");
  code_cmd->add_flag("--json", o->json, "Print the daemon's JSON");
  code_cmd->callback([o, &status] { status.code = run_cell(*o); });
  with_code_options(session.add_subcommand("interrupt", "Interrupt the cell running in a session (its state stays)"), *o)
      ->callback([o, &status] { status.code = interrupt(*o); });
}

}  // namespace airlock::cli
