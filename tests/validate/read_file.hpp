// A whole file as bytes, for the validator's tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace airlock::validate::test {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace airlock::validate::test
