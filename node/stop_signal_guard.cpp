#include "node/stop_signal_guard.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <cassert>
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

constexpr std::array<int, 3> kStopSignals = {SIGINT, SIGTERM, SIGHUP};

// The handler's only work: the signal's number into a pipe the guard's
// thread reads (write is async-signal-safe). A handler, not a mask blocked
// in main and a sigwait thread: a handler runs whichever thread the signal
// lands on, while a mask holds only in the threads that keep it (a first
// version built that way let vt-demo die of a SIGTERM with its validators
// left running).
int g_pipe_write = -1;

void OnStopSignal(int sig) {
  const int saved = errno;
  const auto byte = static_cast<unsigned char>(sig);
  [[maybe_unused]] const ssize_t n = ::write(g_pipe_write, &byte, 1);
  errno = saved;
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
  int pipe[2] = {-1, -1};
  std::array<struct sigaction, kStopSignals.size()> previous{};
  std::array<bool, kStopSignals.size()> caught{};
  std::mutex mu;
  std::vector<std::filesystem::path> dirs;
  std::thread waiter;

  // Byte 0 is the destructor's "stop waiting"; any other is a signal.
  void Wait() {
    for (;;) {
      unsigned char sig = 0;
      const ssize_t n = ::read(pipe[0], &sig, 1);
      if (n < 0 && errno == EINTR) continue;
      if (n != 1 || sig == 0) return;
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
  assert(g_pipe_write < 0 && "one StopSignalGuard a process");
  if (::pipe2(m_state->pipe, O_CLOEXEC) != 0) {
    std::perror("StopSignalGuard: pipe");
    return;  // no guard: the signals keep their default actions
  }
  // Never blocks a handler (a pipe holds far more bytes than signals come).
  ::fcntl(m_state->pipe[1], F_SETFL, O_NONBLOCK);
  g_pipe_write = m_state->pipe[1];
  m_state->waiter = std::thread([state = m_state.get()] { state->Wait(); });
  for (std::size_t i = 0; i < kStopSignals.size(); ++i) {
    struct sigaction now {};
    ::sigaction(kStopSignals[i], nullptr, &m_state->previous[i]);
    // A signal the starter ignores stays ignored (nohup's SIGHUP, a
    // background job's SIGINT), as the shell meant.
    if (m_state->previous[i].sa_handler == SIG_IGN) continue;
    now.sa_handler = OnStopSignal;
    sigemptyset(&now.sa_mask);
    now.sa_flags = SA_RESTART;
    m_state->caught[i] = ::sigaction(kStopSignals[i], &now, nullptr) == 0;
  }
}

StopSignalGuard::~StopSignalGuard() {
  if (m_state->pipe[1] < 0) return;
  for (std::size_t i = 0; i < kStopSignals.size(); ++i)
    if (m_state->caught[i]) ::sigaction(kStopSignals[i], &m_state->previous[i], nullptr);
  const unsigned char stop = 0;
  [[maybe_unused]] const ssize_t n = ::write(m_state->pipe[1], &stop, 1);
  m_state->waiter.join();
  g_pipe_write = -1;
  ::close(m_state->pipe[0]);
  ::close(m_state->pipe[1]);
}

void StopSignalGuard::Watch(const std::filesystem::path& dir) {
  std::lock_guard<std::mutex> lock(m_state->mu);
  m_state->dirs.push_back(dir);
}

}  // namespace vt::node
