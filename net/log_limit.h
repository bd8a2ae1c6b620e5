#pragma once
// Rate limit for log lines a peer can trigger (docs/style.md, "Logs": anything
// a peer can trigger is rate-limited): at most `burst` lines per `window`; the
// first line after a window with suppressed lines reports how many were
// dropped.

#include <chrono>
#include <cstddef>

namespace vt::net {

class LogLimit {
 public:
  using Clock = std::chrono::steady_clock;

  LogLimit(std::size_t burst, Clock::duration window) : m_burst(burst), m_window(window) {}

  // True when a line may be written now. `*suppressed` is set to the number of
  // lines dropped since the last allowed one (0 normally).
  bool Allow(Clock::time_point now, std::size_t* suppressed) {
    if (now - m_window_start >= m_window) {
      m_window_start = now;
      m_in_window = 0;
    }
    if (m_in_window >= m_burst) {
      ++m_suppressed;
      return false;
    }
    ++m_in_window;
    *suppressed = m_suppressed;
    m_suppressed = 0;
    return true;
  }

 private:
  std::size_t m_burst;
  Clock::duration m_window;
  Clock::time_point m_window_start{};
  std::size_t m_in_window = 0;
  std::size_t m_suppressed = 0;
};

}  // namespace vt::net
