#pragma once
// Runs a shell command line and captures its stdout: the one runner behind
// the tests that drive the `vt` binary (tests/node/vt_cli_test.cpp,
// tests/testnet/testnet_util.h).

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace vt::test {

struct CliRun {
  int code = -1;    // exit status; -1 when it did not exit normally or could not start
  std::string out;  // what it wrote to stdout (redirect 2>&1 in `command` for stderr too)
};

inline CliRun RunCommand(const std::string& command) {
  CliRun r;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  while (std::size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  const int status = ::pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace vt::test
