#include "storage/pg_schema.hpp"

namespace airlock::storage::pg {

Status create_schema(Database& db, const std::string& step, const std::string& schema) {
  return db.transaction(step, [&](Database::Tx& tx) -> Status {
    // The audit log's key (1095912523, "AIRK") with 3: the state stores' tables.
    if (auto locked = tx.exec(step + " (lock)", "SELECT pg_advisory_xact_lock(1095912523, 3)"); !locked)
      return locked.error();
    if (auto made = tx.exec(step, schema); !made) return made.error();
    return {};
  });
}

}  // namespace airlock::storage::pg
