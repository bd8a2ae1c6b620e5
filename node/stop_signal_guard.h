#pragma once
// Brings a tool's testnets down when the tool is told to stop.
//
// The daemons of a testnet run in their own sessions (Testnet::Start), so
// that they outlive the `vt testnet up` that started them. A tool that
// starts a testnet for its own run (the testnet benchmark, the kill -9
// soak, the demo) would leave them running if it were interrupted with
// SIGINT or SIGTERM mid-run. Such a tool constructs one StopSignalGuard
// (at most one a process) first thing in main. It catches SIGINT, SIGTERM
// and SIGHUP — a signal the starter made the process ignore stays ignored
// — and on one, on a thread of its own, it closes spawning
// (Testnet::CloseSpawning: a restart racing it fails instead of leaving a
// process behind), stops every process of every watched testnet
// (Testnet::Stop: SIGTERM, a short grace, then SIGKILL), says so on stderr
// and ends the process with status 128 + the signal's number, as a shell
// reports a process the signal killed.

#include <filesystem>
#include <memory>

namespace vt::node {

class StopSignalGuard {
 public:
  StopSignalGuard();
  // Gives the signals their earlier actions back and stops waiting.
  ~StopSignalGuard();
  StopSignalGuard(const StopSignalGuard&) = delete;
  StopSignalGuard& operator=(const StopSignalGuard&) = delete;

  // The testnet in `dir` (Testnet::Create has written it) is stopped on a
  // signal. A directory that no longer holds a testnet then is skipped.
  void Watch(const std::filesystem::path& dir);

 private:
  struct State;
  std::unique_ptr<State> m_state;
};

}  // namespace vt::node
