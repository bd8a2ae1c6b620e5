#pragma once
// Headless Chromium for the explorer test: render a page (JavaScript run,
// fetches answered, timers advanced on a virtual clock) and dump its DOM or
// take a screenshot. Each run is its own process group with a throwaway
// profile, killed as a group when it ends or overruns its time limit, so no
// browser process outlives the test.

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace vt::test {

// $VT_CHROMIUM, else the first of chromium / chromium-browser / google-chrome on $PATH.
inline std::optional<std::filesystem::path> FindChromium() {
  if (const char* env = std::getenv("VT_CHROMIUM"); env != nullptr && *env != '\0') return std::filesystem::path(env);
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
      const std::filesystem::path p = std::filesystem::path(dir) / name;
      if (::access(p.c_str(), X_OK) == 0) return p;
    }
  }
  return std::nullopt;
}

struct BrowserRun {
  bool exited = false;  // false: killed at the time limit
  int exit_code = -1;
  std::string out;
  std::string err;
};

class HeadlessChromium {
 public:
  HeadlessChromium(std::filesystem::path exe, std::filesystem::path work) : m_exe(std::move(exe)), m_work(std::move(work)) {
    std::filesystem::create_directories(m_work);
  }

  // The DOM after `budget_ms` of virtual time (network waits do not count).
  BrowserRun DumpDom(const std::string& url, int budget_ms = 8000) {
    return Run({"--virtual-time-budget=" + std::to_string(budget_ms), "--dump-dom", url});
  }

  BrowserRun Screenshot(const std::string& url, const std::filesystem::path& png, int width, int height,
                        int budget_ms = 8000) {
    return Run({"--virtual-time-budget=" + std::to_string(budget_ms), "--hide-scrollbars",
                "--window-size=" + std::to_string(width) + "," + std::to_string(height), "--screenshot=" + png.string(), url});
  }

 private:
  BrowserRun Run(std::vector<std::string> args) {
    const std::filesystem::path out = m_work / "stdout", err = m_work / "stderr";
    // --no-sandbox: the sandbox needs user namespaces, which test machines
    // and containers (running as root) often lack; the page is our own.
    std::vector<std::string> argv = {m_exe.string(), "--headless", "--no-sandbox", "--disable-gpu",
                                     "--no-first-run", "--disable-dev-shm-usage", "--disable-extensions",
                                     "--user-data-dir=" + (m_work / "profile").string()};
    argv.insert(argv.end(), args.begin(), args.end());
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      std::FILE* o = std::freopen(out.c_str(), "w", stdout);
      std::FILE* e = std::freopen(err.c_str(), "w", stderr);
      if (o == nullptr || e == nullptr) ::_exit(126);
      std::vector<char*> cargv;
      for (std::string& a : argv) cargv.push_back(a.data());
      cargv.push_back(nullptr);
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    BrowserRun run;
    if (pid < 0) return run;
    ::setpgid(pid, pid);  // also here: no race with the child's own call
    const auto deadline = std::chrono::steady_clock::now() + kTimeLimit;
    int status = 0;
    while (true) {
      const pid_t r = ::waitpid(pid, &status, WNOHANG);
      if (r == pid) {
        run.exited = WIFEXITED(status);
        run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        break;
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(-pid, SIGKILL);
        ::waitpid(pid, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    ::kill(-pid, SIGKILL);  // helpers (zygote, renderer) left in the group
    run.out = Slurp(out);
    run.err = Slurp(err);
    return run;
  }

  static std::string Slurp(const std::filesystem::path& p) {
    std::ifstream f(p, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  }

  static constexpr std::chrono::seconds kTimeLimit{60};
  std::filesystem::path m_exe;
  std::filesystem::path m_work;
};

// The text of the element with id `id` up to the first closing tag of its
// kind (enough for the explorer's flat elements), tags stripped.
inline std::string TextOfId(const std::string& dom, const std::string& id, const std::string& tag = "div") {
  const std::size_t at = dom.find("id=\"" + id + "\"");
  if (at == std::string::npos) return {};
  const std::size_t open = dom.find('>', at);
  const std::size_t close = dom.find("</" + tag + ">", open);
  if (open == std::string::npos || close == std::string::npos) return {};
  std::string text;
  bool in_tag = false;
  for (std::size_t i = open + 1; i < close; ++i) {
    if (dom[i] == '<') in_tag = true;
    else if (dom[i] == '>') in_tag = false;
    else if (!in_tag) text += dom[i];
  }
  return text;
}

}  // namespace vt::test
