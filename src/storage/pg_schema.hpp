// Tables a state store creates when missing, under an advisory lock: CREATE TABLE IF NOT
// EXISTS from two replicas starting at once can still fail on the catalog's unique index (as
// the audit log's store, audit/detail/postgres_log_store.cpp, does for its tables).
#pragma once

#include <string>

#include "common/result.hpp"
#include "storage/pg_database.hpp"

namespace airlock::storage::pg {

// `schema` (several statements, no parameters) in one transaction holding the state stores'
// advisory lock. Errors as Database's ("storage", "storage_unavailable").
Status create_schema(Database& db, const std::string& step, const std::string& schema);

}  // namespace airlock::storage::pg
