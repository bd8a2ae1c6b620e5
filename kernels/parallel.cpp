// A persistent work-sharing pool behind ParallelFor.
//
// Each ParallelFor call is a Job of `chunks` contiguous pieces of [0, n). The
// caller publishes the job in a queue, then claims and runs pieces itself
// while pool workers claim the rest. Claiming and completing happen under the
// pool mutex, and a caller returns only after observing (under that mutex)
// that all pieces completed, so no worker touches a Job after its caller has
// returned. The caller waits only for pieces already being run by someone,
// never for queued ones (it runs those itself), so nested ParallelFor calls
// (from inside fn) and concurrent callers from several threads cannot
// deadlock; a nested call on a busy pool simply runs on fewer threads.
// Workers are created on demand up to the largest thread count asked for
// (capped) and live until process exit. fn must not throw (the library is
// exception-free); an exception escaping fn terminates the process.

#include "kernels/parallel.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace vt::kernels {
namespace {

constexpr int kMaxThreads = 256;

struct Job {
  const std::function<void(std::int64_t, std::int64_t)>* fn = nullptr;
  std::int64_t n = 0;
  int chunks = 0;
  int next = 0;  // next unclaimed piece (guarded by the pool mutex)
  int done = 0;  // completed pieces (guarded by the pool mutex)

  std::int64_t Begin(int piece) const { return n * piece / chunks; }
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
    {
      std::lock_guard lock(m_mutex);
      EnsureWorkers(job.chunks - 1);
      m_queue.push_back(&job);
    }
    m_work_cv.notify_all();
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
      std::lock_guard lock(m_mutex);
      ++job.done;
    }
    std::unique_lock lock(m_mutex);
    m_done_cv.wait(lock, [&] { return job.done == job.chunks; });
  }

 private:
  Pool() = default;

  void EnsureWorkers(int wanted) {
    while (static_cast<int>(m_workers.size()) < wanted) {
      m_workers.emplace_back([this] { WorkerLoop(); });
      m_workers.back().detach();
    }
  }

  void Unqueue(Job* job) {
    auto it = std::find(m_queue.begin(), m_queue.end(), job);
    if (it != m_queue.end()) m_queue.erase(it);
  }

  void WorkerLoop() {
    std::unique_lock lock(m_mutex);
    for (;;) {
      m_work_cv.wait(lock, [&] { return !m_queue.empty(); });
      Job* job = m_queue.front();
      const int piece = job->next++;
      if (job->next == job->chunks) m_queue.pop_front();
      const auto* fn = job->fn;
      const std::int64_t begin = job->Begin(piece), end = job->Begin(piece + 1);
      lock.unlock();
      (*fn)(begin, end);
      lock.lock();
      if (++job->done == job->chunks) m_done_cv.notify_all();
    }
  }

  std::mutex m_mutex;
  std::condition_variable m_work_cv;
  std::condition_variable m_done_cv;
  std::deque<Job*> m_queue;
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

}  // namespace vt::kernels
