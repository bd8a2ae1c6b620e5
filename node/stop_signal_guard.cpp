#include "node/stop_signal_guard.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include "node/testnet.h"

namespace vt::node {
namespace {

// Each process gets this long to exit on SIGTERM before SIGKILL: the
// testnets of tools are thrown away, so a short grace is enough.
constexpr std::chrono::seconds kGrace{2};

sigset_t StopSignals() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&set, s);
  return set;
}

// Every process of the testnet in `dir`, the workers before the nodes (as Testnet::Down).
void StopTestnet(const std::filesystem::path& dir) {
  auto t = Testnet::Load(dir);
  if (!t.ok()) return;  // taken down and removed already
  const std::vector<ProcessInfo> procs = t->processes();
  for (auto it = procs.rbegin(); it != procs.rend(); ++it) (void)t->Stop(it->name, kGrace);
}

}  // namespace

struct StopSignalGuard::State {
  sigset_t signals = StopSignals();
  sigset_t previous{};
  std::mutex mu;
  std::vector<std::filesystem::path> dirs;
  std::atomic<bool> done{false};
  std::thread waiter;

  void Wait() {
    const timespec poll{0, 200'000'000};  // wakes to see `done`
    while (!done.load()) {
      siginfo_t info{};
      const int sig = ::sigtimedwait(&signals, &info, &poll);
      if (sig < 0) continue;  // EAGAIN (the poll) or EINTR
      Testnet::CloseSpawning();
      std::vector<std::filesystem::path> watched;
      {
        std::lock_guard<std::mutex> lock(mu);
        watched = dirs;
      }
      std::fprintf(stderr, "signal %d: stopping %zu testnet(s) this process started\n", sig, watched.size());
      for (const std::filesystem::path& dir : watched) StopTestnet(dir);
      std::_Exit(128 + sig);
    }
  }
};

StopSignalGuard::StopSignalGuard() : m_state(std::make_unique<State>()) {
  ::pthread_sigmask(SIG_BLOCK, &m_state->signals, &m_state->previous);
  m_state->waiter = std::thread([state = m_state.get()] { state->Wait(); });
}

StopSignalGuard::~StopSignalGuard() {
  m_state->done = true;
  m_state->waiter.join();
  ::pthread_sigmask(SIG_SETMASK, &m_state->previous, nullptr);
}

void StopSignalGuard::Watch(const std::filesystem::path& dir) {
  std::lock_guard<std::mutex> lock(m_state->mu);
  m_state->dirs.push_back(dir);
}

}  // namespace vt::node
