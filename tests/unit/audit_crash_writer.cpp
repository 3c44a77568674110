// Helper for audit_crash_test: appends records from several threads and reports each
// acknowledged append on a pipe, until it is killed.
//
//   audit_crash_writer LOG ROUND COUNT WRITERS ACK_FD
//
// Each acknowledgement is one line "index round writer seq\n", written with a single write()
// (shorter than PIPE_BUF, so lines never interleave) only after append() returned ok.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "audit/audit_log.hpp"

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s LOG ROUND COUNT WRITERS ACK_FD\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  long round = std::atol(argv[2]);
  long count = std::atol(argv[3]);
  long writers = std::atol(argv[4]);
  int ack_fd = std::atoi(argv[5]);

  airlock::audit::AuditLogOptions options;
  options.checkpoint_every_records = 500;
  auto log = airlock::audit::AuditLog::open(path, options);
  if (!log) {
    std::fprintf(stderr, "audit_crash_writer: %s\n", log.error().message.c_str());
    return 3;
  }
  std::atomic<long> next{0};
  std::vector<std::thread> threads;
  for (long w = 0; w < writers; ++w)
    threads.emplace_back([&, w] {
      for (long seq = next++; seq < count; seq = next++) {
        nlohmann::json fields = {{"round", round}, {"writer", w}, {"seq", seq},
                                 {"padding", std::string(200, 'p')}};
        auto receipt = (*log)->append(fields);
        if (!receipt) {
          std::fprintf(stderr, "audit_crash_writer: %s\n", receipt.error().message.c_str());
          std::_Exit(4);
        }
        std::string line = std::to_string(receipt->index) + " " + std::to_string(round) + " " +
                           std::to_string(w) + " " + std::to_string(seq) + "\n";
        if (::write(ack_fd, line.data(), line.size()) != static_cast<ssize_t>(line.size()))
          std::_Exit(5);
      }
    });
  for (auto& t : threads) t.join();
  return (*log)->close() ? 0 : 6;
}
