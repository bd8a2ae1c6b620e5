#pragma once
// A fault-injection TCP proxy on loopback (test support, like CometBFT's
// e2e perturbations or a Jepsen nemesis): it sits in front of one node's
// P2P port; peers dial the proxy, the proxy dials the node. Faults apply per
// whole P2P frame (net/frame.h: 14-byte header, payload length at offset 6),
// so a dropped, duplicated or delayed message never corrupts the stream:
//
// * drop       a frame is not forwarded, with this probability;
// * duplicate  a frame is forwarded twice (a replay);
// * corrupt    one random bit of the frame's body is flipped;
// * inject     a forged frame (same header, random body) is written first;
// * delay      each frame waits a random time in [min, max] ms before it is
//              written, in order: a frame never overtakes an earlier one of
//              its direction (latency and jitter, as TCP sees a network);
// * partition  every open link is cut and new ones are refused until healed
//              (what a network partition looks like to TCP peers).
//
// P2P links are sealed after the handshake (docs/net.md, "Frame
// encryption"): there, drop, duplicate, corrupt and inject are what an
// attacker on the path can do, and the receiving node answers each by
// closing the link (its peer redials); the stream's message loss is then
// the loss of what was in flight on a link that resets. Delays and
// partitions keep their meaning. The length prefix stays readable, so the
// proxy still works on whole frames.
//
// Session frames (hello, auth, disconnect, ping, pong) are never faulted by
// default, so sessions still establish; `faulty_types` narrows the faults
// to some types. Bytes that do not parse as frames are forwarded unchanged.
// Randomness comes from the seed (reproducible decisions; the interleaving
// with the peers' own timing is not).

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/bytes.h"
#include "common/result.h"

namespace vt::test {

struct FaultPolicy {
  double drop = 0;
  double duplicate = 0;
  double corrupt = 0;
  double inject = 0;
  std::uint32_t min_delay_ms = 0;
  std::uint32_t max_delay_ms = 0;
  std::set<std::uint16_t> faulty_types;  // empty: every type but the session ones
};

struct FaultStats {
  std::uint64_t links = 0;       // links accepted and connected through
  std::uint64_t refused = 0;     // links refused while partitioned
  std::uint64_t forwarded = 0;   // frames written (a duplicate counts twice)
  std::uint64_t dropped = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t corrupted = 0;
  std::uint64_t injected = 0;
  std::uint64_t delayed = 0;
};

class FaultProxy {
 public:
  // `listen_host`: another loopback address (127.0.0.2, …) makes the proxy
  // listen there on the target's own port number. The P2P handshake binds
  // the port the dialer connected to (docs/net.md, "Handshake"), so a node
  // accepts a dialer through the proxy only when that port is its own.
  // Default: 127.0.0.1 on an ephemeral port (a proxy for non-P2P tests).
  FaultProxy(std::uint16_t target_port, std::uint64_t seed, std::string listen_host = "127.0.0.1");
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  // Binds (see the constructor) and starts the proxy's thread.
  Status Start();
  void Stop();
  const std::string& host() const { return m_host; }
  std::uint16_t port() const { return m_port; }

  void SetPolicy(FaultPolicy policy);
  // true: cut every link and refuse new ones; false: accept again.
  void Partition(bool on);
  FaultStats stats() const;

 private:
  class Link;
  friend class Link;
  void Accept();
  // Per frame: how many copies to write (0: dropped) and after what delay.
  struct Fate {
    int copies = 1;
    std::uint32_t delay_ms = 0;
    std::optional<std::size_t> flip_bit;  // of the body
    bool inject = false;
  };
  Fate Decide(std::uint16_t type, std::size_t body_bytes);
  Bytes RandomBytes(std::size_t n);

  std::uint16_t m_target_port;
  std::string m_host;
  std::uint16_t m_port = 0;
  boost::asio::io_context m_io;
  boost::asio::ip::tcp::acceptor m_acceptor{m_io};
  std::thread m_thread;
  std::atomic<bool> m_partitioned{false};
  mutable std::mutex m_mu;  // policy, rng, stats, links
  FaultPolicy m_policy;
  std::mt19937_64 m_rng;
  FaultStats m_stats;
  std::vector<std::weak_ptr<Link>> m_links;
};

}  // namespace vt::test
