// A persistent work-sharing pool behind ParallelFor.
//
// Each ParallelFor call is a Job of `chunks` contiguous pieces of [0, n). The
// caller publishes the job in a queue, then claims and runs pieces itself
// while pool workers claim the rest. Claiming happens under the pool mutex;
// completing is an atomic count, and a worker reads nothing of a Job after
// counting its piece done, so no worker touches a Job after its caller has
// returned. The caller waits only for pieces already being run by someone,
// never for queued ones (it runs those itself), so nested ParallelFor calls
// (from inside fn) and concurrent callers from several threads cannot
// deadlock; a nested call on a busy pool simply runs on fewer threads.
// Workers are created on demand up to the largest thread count asked for
// (capped) and live until process exit. fn must not throw (the library is
// exception-free); an exception escaping fn terminates the process.
//
// Waiting spins before it sleeps. Waking a thread parked on a futex costs
// tens of microseconds on a VM (parallel_bench: a region of 50 µs of work
// took 57 µs on two threads with sleeping workers, 29 µs under OpenMP),
// and a training step is a run of regions a few microseconds apart. So an
// idle worker, and a caller waiting for a worker's piece, first poll for
// kSpin and only then park on a condition variable: a worker keeps a core
// busy for at most kSpin after its last piece. Between polls it pauses, and
// after the first tenth of kSpin it also yields the core, so that a thread
// waiting for it runs (OpenBLAS's, whose threads spin after each call, or a
// checkpoint writer): without the yields native mode's mlp-fashion step on
// two threads took 0.84 ms, 0.70 with them, 0.65 before the pool spun.
// ParkIdleWorkers ends the spinning early.

#include "kernels/parallel.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace vt::kernels {
namespace {

constexpr int kMaxThreads = 256;
constexpr std::chrono::microseconds kSpin{200};

// Polls `ready` for up to kSpin; true once it holds.
template <class Ready>
bool SpinUntil(const Ready& ready) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now(), deadline = start + kSpin, yield_from = start + kSpin / 10;
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    }
    const Clock::time_point now = Clock::now();
    if (now >= deadline) return ready();
    if (now >= yield_from) std::this_thread::yield();
  }
}

struct Job {
  const std::function<void(std::int64_t, std::int64_t)>* fn = nullptr;
  std::int64_t n = 0;
  int chunks = 0;
  int next = 0;               // next unclaimed piece (guarded by the pool mutex)
  std::atomic<int> done = 0;  // completed pieces

  std::int64_t Begin(int piece) const { return n * piece / chunks; }
  bool Done() const { return done.load(std::memory_order_acquire) == chunks; }
};

class Pool {
 public:
  static Pool& Instance() {
    // Leaked on purpose: workers may still be parked at static destruction.
    static Pool* pool = new Pool();
    return *pool;
  }

  void Run(int threads, std::int64_t n, const std::function<void(std::int64_t, std::int64_t)>& fn) {
    Job job;
    job.fn = &fn;
    job.n = n;
    job.chunks = static_cast<int>(std::min<std::int64_t>(std::min(threads, kMaxThreads), n));
    bool wake = false;
    {
      std::lock_guard lock(m_mutex);
      EnsureWorkers(job.chunks - 1);
      m_queue.push_back(&job);
      m_queued.store(true, std::memory_order_release);
      m_park.store(false, std::memory_order_relaxed);
      wake = m_sleeping > 0;
    }
    if (wake) m_work_cv.notify_all();
    // Help with our own job until every piece is claimed.
    for (;;) {
      int piece;
      {
        std::lock_guard lock(m_mutex);
        if (job.next >= job.chunks) break;
        piece = job.next++;
        if (job.next == job.chunks) Unqueue(&job);
      }
      fn(job.Begin(piece), job.Begin(piece + 1));
      job.done.fetch_add(1, std::memory_order_acq_rel);
    }
    if (SpinUntil([&] { return job.Done(); })) return;
    std::unique_lock lock(m_mutex);
    m_done_cv.wait(lock, [&] { return job.Done(); });
  }

  // Idle workers stop spinning and park until the next job.
  void Park() { m_park.store(true, std::memory_order_relaxed); }

 private:
  Pool() = default;

  void EnsureWorkers(int wanted) {
    while (static_cast<int>(m_workers.size()) < wanted) {
      m_workers.emplace_back([this] { WorkerLoop(); });
      m_workers.back().detach();
    }
  }

  // Under the mutex.
  void Unqueue(Job* job) {
    auto it = std::find(m_queue.begin(), m_queue.end(), job);
    if (it != m_queue.end()) m_queue.erase(it);
    m_queued.store(!m_queue.empty(), std::memory_order_release);
  }

  void WorkerLoop() {
    for (;;) {
      SpinUntil(
          [&] { return m_queued.load(std::memory_order_acquire) || m_park.load(std::memory_order_relaxed); });
      std::unique_lock lock(m_mutex);
      if (m_queue.empty()) {
        ++m_sleeping;
        m_work_cv.wait(lock, [&] { return !m_queue.empty(); });
        --m_sleeping;
      }
      Job* job = m_queue.front();
      const int piece = job->next++;
      if (job->next == job->chunks) Unqueue(job);
      const auto* fn = job->fn;
      const std::int64_t begin = job->Begin(piece), end = job->Begin(piece + 1);
      const int chunks = job->chunks;
      lock.unlock();
      (*fn)(begin, end);
      // The last reference to *job: once the count reaches `chunks` its
      // caller may return. The notify below touches only the pool (taking the
      // mutex first, so a caller between its check and its wait is not missed).
      if (job->done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) {
        std::lock_guard done_lock(m_mutex);
        m_done_cv.notify_all();
      }
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_work_cv;
  std::condition_variable m_done_cv;
  std::deque<Job*> m_queue;
  std::atomic<bool> m_queued = false;  // !m_queue.empty(), for polling without the mutex
  std::atomic<bool> m_park = false;    // ParkIdleWorkers since the last job
  int m_sleeping = 0;                  // workers parked on m_work_cv (guarded by the mutex)
  std::vector<std::thread> m_workers;
};

}  // namespace

void ParallelFor(int threads, std::int64_t n,
                 const std::function<void(std::int64_t begin, std::int64_t end)>& fn) {
  if (n <= 0) return;
  if (threads <= 1 || n == 1) {
    fn(0, n);
    return;
  }
  Pool::Instance().Run(threads, n, fn);
}

void ParkIdleWorkers() { Pool::Instance().Park(); }

}  // namespace vt::kernels
