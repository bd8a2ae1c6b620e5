#pragma once
// One validator (NodeTestKey(1)) in-process with an RPC client, stopped and
// started again on the same data directory: the fixture under the
// blob-upload and instant-mode tests, which add their own helpers.

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "node/client.h"
#include "node/node.h"
#include "tests/node/node_test_util.h"

namespace vt::test {

class OneValidatorNode {
 public:
  OneValidatorNode(const std::string& tag, node::GenesisFile genesis, node::BlobLimits blobs = {})
      : m_name(tag), m_dir(tag), m_genesis(std::move(genesis)), m_blobs(blobs) {}
  ~OneValidatorNode() { Stop(); }
  OneValidatorNode(const OneValidatorNode&) = delete;
  OneValidatorNode& operator=(const OneValidatorNode&) = delete;

  void Start() {
    node::NodeConfig c;
    c.name = m_name;
    c.data_dir = m_dir.path();
    c.genesis = m_genesis;
    c.validator_key = NodeTestKey(1);
    c.blobs = m_blobs;
    auto n = node::Node::Create(std::move(c));
    ASSERT_TRUE(n.ok()) << n.status().ToString();
    m_node = std::move(*n);
    ASSERT_TRUE(m_node->Start().ok());
    m_client.emplace("127.0.0.1", m_node->rpc_port(), std::chrono::seconds(10));
  }
  void Stop() {
    m_client.reset();
    if (m_node) m_node->Stop();
    m_node.reset();
  }
  node::ChainClient& client() { return *m_client; }
  const node::GenesisFile& genesis() const { return m_genesis; }

 private:
  std::string m_name;
  TempDir m_dir;
  node::GenesisFile m_genesis;
  node::BlobLimits m_blobs;
  std::unique_ptr<node::Node> m_node;
  std::optional<node::ChainClient> m_client;
};

}  // namespace vt::test
