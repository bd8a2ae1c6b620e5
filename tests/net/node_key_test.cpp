// The persisted node key of non-validator nodes (net/node_key.h).

#include "net/node_key.h"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <random>
#include <string>

namespace vt::net {
namespace {

class NodeKeyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = std::filesystem::temp_directory_path() /
            ("vt-node-key-" + std::to_string(std::random_device{}()) + "-" + std::to_string(::getpid()));
    std::filesystem::create_directories(m_dir);
  }
  void TearDown() override { std::filesystem::remove_all(m_dir); }
  std::filesystem::path m_dir;
};

TEST_F(NodeKeyTest, CreatedOnceWithMode0600AndTheSameOnEveryLoad) {
  const auto path = m_dir / "node_key";
  Result<crypto::SecretKey> first = LoadOrCreateNodeKey(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  Result<crypto::SecretKey> again = LoadOrCreateNodeKey(path);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->public_key(), first->public_key());
  // Another data dir, another identity.
  Result<crypto::SecretKey> other = LoadOrCreateNodeKey(m_dir / "node_key_2");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->public_key(), first->public_key());
}

TEST_F(NodeKeyTest, AKeyReadableByOthersOrCorruptIsRefused) {
  const auto path = m_dir / "node_key";
  ASSERT_TRUE(LoadOrCreateNodeKey(path).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  EXPECT_EQ(LoadOrCreateNodeKey(path).status().reason(), "node-key-insecure");
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  std::filesystem::resize_file(path, 10);
  const Status st = LoadOrCreateNodeKey(path).status();
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.reason(), "keyfile-truncated");
}

}  // namespace
}  // namespace vt::net
