// SQLite's WAL checkpoints off the request path (docs/performance.md, "MCP: /mcp beside /v1,
// and the gateway beside a direct call", session 38). By default SQLite checkpoints in the
// connection whose commit takes the WAL past 1000 frames: that commit copies the pages into the
// database file and syncs it before it returns, about once in 75 of the daemon's gateway calls
// (measured: p99 of a gateway call 8.3-10.5 ms with it on the request path, 3.6-4.2 ms without).
// A writer connection given to checkpoint_in_background() instead asks one background thread of
// the process to checkpoint its database, from a connection of that thread's own (PASSIVE: it
// waits for no reader and no writer; synchronous=FULL). A WAL past kInlineCheckpointFrames (the
// thread has fallen behind, or cannot open the file) is still checkpointed by the committing
// connection, as SQLite would: the WAL stays bounded.
#pragma once

#include <cstdint>

struct sqlite3;

namespace airlock::storage {

inline constexpr int kBackgroundCheckpointFrames = 4096;  // a commit past it asks the thread
inline constexpr int kInlineCheckpointFrames = 32768;     // past it the commit checkpoints itself

// Replaces the connection's automatic checkpoint (its WAL hook) with the above. For connections
// in WAL mode that write; a read-only one needs none.
void checkpoint_in_background(sqlite3* db);

// What the process has done so far (tests, diagnostics).
struct CheckpointCounts {
  std::uint64_t background = 0, inline_ = 0;
};
CheckpointCounts checkpoint_counts();
// Tests only: while held, the background thread takes no work (as if it had fallen behind).
void hold_background_checkpoints(bool held);

}  // namespace airlock::storage
