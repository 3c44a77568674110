#include "server/mcp_server/mcp_pages.hpp"

#include <charconv>
#include <random>

#include "common/digest.hpp"

namespace airlock::server {

McpPages::McpPages() {
  std::random_device random;  // the kernel's getrandom()
  key_.resize(32);
  for (auto& b : key_) b = static_cast<char>(random() & 0xff);
}

std::string McpPages::cursor_for(std::size_t offset) const {
  const std::string text = "tools/" + std::to_string(offset);
  return text + "." + hmac_sha256_hex(key_, text);
}

std::optional<std::size_t> McpPages::offset_of(const std::string& cursor) const {
  const auto dot = cursor.rfind('.');
  if (dot == std::string::npos || cursor.rfind("tools/", 0) != 0) return std::nullopt;
  const std::string text = cursor.substr(0, dot);
  if (!constant_time_equal(cursor.substr(dot + 1), hmac_sha256_hex(key_, text))) return std::nullopt;
  std::size_t offset = 0;
  const char* digits = text.data() + 6;
  const auto [end, ec] = std::from_chars(digits, text.data() + text.size(), offset);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return offset;
}

nlohmann::json McpPages::page(const nlohmann::json& items, const std::string& key, std::size_t offset,
                              std::size_t page_size) const {
  nlohmann::json out = {{key, nlohmann::json::array()}};
  for (std::size_t i = offset; i < items.size() && i - offset < page_size; ++i) out[key].push_back(items[i]);
  if (offset < items.size() && items.size() - offset > page_size) out["nextCursor"] = cursor_for(offset + page_size);
  return out;
}

}  // namespace airlock::server
