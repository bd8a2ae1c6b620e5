// P2PNode: the authenticated handshake (net/handshake.h, docs/net.md
// "Handshake"). A connection is established only when the peer's Auth proves
// the node key its Hello claimed; until then no other message is read and the
// claimed id is never scored, banned or compared with other peers' ids.

#include <utility>

#include "crypto/random.h"
#include "net/p2p_internal.h"

namespace vt::net {

using namespace p2p_detail;

namespace {
HandshakeRole OurRole(const Connection& conn) {
  return conn.inbound() ? HandshakeRole::kListener : HandshakeRole::kDialer;
}
HandshakeRole PeerRole(const Connection& conn) {
  return conn.inbound() ? HandshakeRole::kDialer : HandshakeRole::kListener;
}
}  // namespace

Hello P2PNode::OurHello(const PeerSession& session) const {
  Hello h;
  h.protocol_version = kProtocolVersion;
  h.chain_id = m_config.chain_id;
  h.genesis_hash = m_config.genesis_hash;
  h.node_id = m_node_id;
  h.challenge = session.our_challenge;
  h.ephemeral = session.our_ephemeral;
  h.listen_port = m_listen_port.load();
  h.best_height = m_blocks != nullptr ? m_blocks->TipHeight() : 0;
  h.user_agent = m_config.user_agent;
  return h;
}

void P2PNode::StartHandshake(const ConnPtr& conn) {
  PeerSession& s = conn->session();
  // The challenge must be unpredictable, or a signature could be collected
  // in advance: no OS randomness, no connection.
  if (!crypto::FillOsRandom(s.our_challenge.bytes).ok()) {
    Log().error("no OS randomness for a handshake challenge");
    conn->Close("handshake-no-randomness", false);
    return;
  }
  Result<crypto::X25519Key> ephemeral = crypto::X25519Key::Generate();
  if (!ephemeral.ok()) {
    Log().error("no ephemeral key for a handshake: {}", ephemeral.status().ToString());
    conn->Close("handshake-no-randomness", false);
    return;
  }
  s.ephemeral.emplace(std::move(ephemeral).value());
  std::copy(s.ephemeral->public_key().begin(), s.ephemeral->public_key().end(), s.our_ephemeral.bytes.begin());
  conn->Send(MsgType::kHello, EncodeToBytes(OurHello(s)));
}

HandshakeTranscript P2PNode::Transcript(const ConnPtr& conn) const {
  const PeerSession& s = conn->session();
  HandshakeTranscript t;
  t.protocol_version = kProtocolVersion;
  t.chain_id = m_config.chain_id;
  t.genesis_hash = m_config.genesis_hash;
  if (conn->inbound()) {
    t.dialer_id = s.hello.node_id;
    t.dialer_challenge = s.hello.challenge;
    t.dialer_ephemeral = s.hello.ephemeral;
    t.listener_id = m_node_id;
    t.listener_challenge = s.our_challenge;
    t.listener_ephemeral = s.our_ephemeral;
    t.listener_port = conn->local_port();
  } else {
    t.dialer_id = m_node_id;
    t.dialer_challenge = s.our_challenge;
    t.dialer_ephemeral = s.our_ephemeral;
    t.listener_id = s.hello.node_id;
    t.listener_challenge = s.hello.challenge;
    t.listener_ephemeral = s.hello.ephemeral;
    t.listener_port = conn->remote().port;
  }
  return t;
}

Status P2PNode::CheckHello(const Hello& hello) const {
  if (hello.protocol_version != kProtocolVersion) {
    return Status::Invalid("handshake-bad-version", "peer speaks version " + std::to_string(hello.protocol_version));
  }
  if (hello.chain_id != m_config.chain_id) return Status::Invalid("handshake-wrong-chain", hello.chain_id);
  if (hello.genesis_hash != m_config.genesis_hash) return Status::Invalid("handshake-wrong-genesis");
  if (!crypto::PublicKey::FromBytes(hello.node_id.bytes).ok()) {
    return Status::Invalid("handshake-bad-node-id", "not an x-only secp256k1 public key");
  }
  return Status::Ok();
}

void P2PNode::RejectHandshake(const ConnPtr& conn, const Status& status) {
  if (PeerLogAllowed()) {
    Log().info("handshake rejected peer={} addr={} reason={}", conn->id(), conn->remote().ToString(),
               status.ToString());
  }
  conn->Close(status.reason(), true);
}

void P2PNode::HandleHello(const ConnPtr& conn, Frame& frame) {
  PeerSession& s = conn->session();
  if (s.hello_received) {
    Misbehave(conn, penalty::kProtocolViolation, "handshake-duplicate-hello");
    return;
  }
  std::optional<Hello> hello = DecodeOrScore<Hello>(conn, frame);
  if (!hello) return;
  if (Status st = CheckHello(*hello); !st.ok()) return RejectHandshake(conn, st);
  s.hello_received = true;
  s.hello = std::move(*hello);
  const HandshakeTranscript t = Transcript(conn);
  Result<SessionKeys> keys = DeriveSessionKeys(t, OurRole(*conn), *s.ephemeral);
  s.ephemeral.reset();  // forward secrecy: the secret lives only in the session keys
  if (!keys.ok()) return RejectHandshake(conn, keys.status());
  Result<crypto::Signature> sig = SignHandshake(*m_node_key, t, OurRole(*conn));
  Result<crypto::SessionCipher> seal = crypto::SessionCipher::Create(keys->send);
  if (!sig.ok() || !seal.ok()) {
    Log().error("handshake signing failed: {}", (sig.ok() ? seal.status() : sig.status()).ToString());
    conn->Close("handshake-sign-failed", true);
    return;
  }
  conn->Send(MsgType::kAuth, EncodeToBytes(AuthMsg{*sig}));
  // Everything we send after our Auth is sealed.
  conn->SealFromNow(std::move(seal).value());
  s.recv_key = keys->recv;
}

void P2PNode::HandleAuth(const ConnPtr& conn, Frame& frame) {
  if (!conn->session().hello_received) {
    Misbehave(conn, penalty::kProtocolViolation, "handshake-expected-hello");
    return;
  }
  std::optional<AuthMsg> auth = DecodeOrScore<AuthMsg>(conn, frame);
  if (!auth) return;
  // Not scored: a signature that does not verify proves nothing about anyone,
  // and the address is all we could hold it against (closing costs the peer
  // its connection).
  if (!VerifyHandshake(Transcript(conn), PeerRole(*conn), auth->signature)) {
    return RejectHandshake(conn, Status::Invalid("handshake-bad-signature"));
  }
  if (Status st = CheckProvenPeer(conn); !st.ok()) return RejectHandshake(conn, st);
  // Everything the peer sends after its Auth is sealed with its send key
  // (set when we answered its Hello, which HandleAuth requires).
  if (!conn->session().recv_key) {
    conn->Close("handshake-expected-hello", true);
    return;
  }
  Result<crypto::SessionCipher> open = crypto::SessionCipher::Create(*conn->session().recv_key);
  conn->session().recv_key.reset();
  if (!open.ok()) {
    conn->Close("handshake-sign-failed", true);
    return;
  }
  conn->OpenFromNow(std::move(open).value());
  Establish(conn);
}

Status P2PNode::CheckProvenPeer(const ConnPtr& conn) {
  PeerSession& s = conn->session();
  const Hash256& id = s.hello.node_id;
  if (id == m_node_id) {
    // Only our own key signs as us, so this is our own dial (it is checked
    // after the proof: an impostor claiming our id cannot stop our dialing).
    if (s.dial_target) m_targets[*s.dial_target].disabled = true;
    return Status::Invalid("handshake-self-connection");
  }
  if (IsBanned(NodeKey(id), Clock::now())) {
    ++m_counters.refused_banned;
    return Status::Invalid("banned");
  }
  // Pending connections do not count against max_inbound, so the bound is
  // checked again when one becomes a peer.
  if (conn->inbound() && EstablishedInbound() >= m_config.max_inbound) return Status::Invalid("too-many-peers");
  for (auto& [pid, other] : m_peers) {
    if (other == conn || !other->open() || !other->session().established) continue;
    if (other->session().hello.node_id != id) continue;
    // Two connections to one node (both dialed each other): both ends keep
    // the one dialed by the smaller node id, so they agree without talking.
    // From the same dialer the newer wins (the peer restarted). Both ids are
    // proven, so nobody else can close a peer's connection this way.
    const Hash256& dialer_new = conn->inbound() ? id : m_node_id;
    const Hash256& dialer_old = other->inbound() ? id : m_node_id;
    if (dialer_old < dialer_new) return Status::Invalid("duplicate-connection");
    other->Close("duplicate-connection", true);
  }
  return Status::Ok();
}

void P2PNode::Establish(const ConnPtr& conn) {
  PeerSession& s = conn->session();
  s.established = true;
  s.last_ping_sent = Clock::now();
  ++m_counters.handshakes;
  if (s.dial_target) m_targets[*s.dial_target].backoff = std::chrono::milliseconds(0);
  if (PeerLogAllowed()) {
    Log().info("peer connected peer={} addr={} inbound={} node={} height={}", conn->id(), conn->remote().ToString(),
               conn->inbound(), s.hello.node_id.Hex().substr(0, 16), s.hello.best_height);
  }
  if (m_handler != nullptr) m_handler->OnPeerConnected(conn->Info());
  if (conn->open()) MaybeSync(conn);
}

}  // namespace vt::net
