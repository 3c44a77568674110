// Cursor pagination of tools/list. A cursor is opaque to the client: the offset of the next
// page and an HMAC of it under a key this process drew at start, so that a cursor the server
// did not issue (forged, altered, from another daemon or a daemon before a restart) is refused
// with -32602 rather than read. A list that changed between pages is announced by
// notifications/tools/list_changed; a cursor past its end gives an empty last page.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace airlock::server {

class McpPages {
 public:
  McpPages();  // a random key

  // Where the page `cursor` names starts; nullopt when the cursor is not one this object issued.
  std::optional<std::size_t> offset_of(const std::string& cursor) const;
  // The page of `items` from `offset`, as {key: [...], nextCursor?}.
  nlohmann::json page(const nlohmann::json& items, const std::string& key, std::size_t offset,
                      std::size_t page_size) const;

 private:
  std::string cursor_for(std::size_t offset) const;

  std::string key_;
};

}  // namespace airlock::server
