// The tools the config's MCP servers provide, as the daemon publishes them: each listing the
// gateway reports is pinned and admitted (mcp/catalog.hpp), and when what is admitted
// changes, a new generation is built from the config as loaded plus every server's admitted
// tools. A reload brings a new config; the last listing of each server it kept unchanged is
// admitted again (pins an admin approved meanwhile take effect: approve, then SIGHUP).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/result.hpp"
#include "mcp/listed_tool.hpp"
#include "mcp/pin_store.hpp"
#include "policy/config.hpp"

namespace airlock::server {

class GatewayTools {
 public:
  // `publish` builds and publishes a generation from a complete config (the daemon's). It is
  // called under this object's lock: publishes never interleave.
  // `log` gets one line per refused tool and per publish failure.
  using Publish = std::function<Status(policy::Config)>;
  GatewayTools(mcp::PinStore& pins, Publish publish, std::function<void(const std::string&)> log);

  // The config as loaded (at start and on each reload), published with the admitted tools of
  // the servers it kept unchanged (those of servers removed or changed are dropped). If the
  // publish fails, nothing changes and its error is returned.
  Status set_config(std::shared_ptr<const policy::Config> base);

  // A listing from the gateway: admits it and publishes when what is admitted changed.
  void on_listing(const std::string& server, const std::vector<mcp::ListedTool>& tools);

  // Whether the tool as an instance listed it still matches its approved pin.
  Status admitted(const std::string& server, const mcp::ListedTool& tool);

 private:
  policy::Config compose_locked() const;
  // Admits `tools` for `server` into admitted_ (false: the listing was refused whole).
  bool admit_locked(const policy::McpServerConfig& server, const std::vector<mcp::ListedTool>& tools);
  void log_once_locked(const std::string& line);

  mcp::PinStore& pins_;
  Publish publish_;
  std::function<void(const std::string&)> log_;
  std::mutex mu_;
  std::shared_ptr<const policy::Config> base_;
  std::map<std::string, std::vector<policy::ToolConfig>> admitted_;  // by server
  std::map<std::string, std::vector<mcp::ListedTool>> last_listing_;  // by server
  std::set<std::string> logged_;  // each instance lists again: say each refusal once
};

}  // namespace airlock::server
