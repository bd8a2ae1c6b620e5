#pragma once
// The web explorer served by vt-node (docs/node.md, "Explorer"): its pages
// (node/explorer/*, embedded into the binary at build time) on GET, and the
// read-only JSON-RPC methods they call beside the node's others. Every
// method is bounded: a page of at most a fixed number of items, a scan of at
// most a fixed number of blocks per call (the reply says where to go on).

#include <cstdint>
#include <functional>

#include "net/rpc_server.h"
#include "node/chain.h"

namespace vt::node {

// Bounds on what one explorer call reads or returns.
inline constexpr std::uint64_t kExplorerMaxBlocks = 50;          // list_blocks page
inline constexpr std::uint64_t kExplorerMaxAccounts = 100;       // list_accounts page
inline constexpr std::uint64_t kExplorerScanBlocks = 2000;       // get_bounty_timeline blocks per call
inline constexpr std::uint64_t kExplorerGameScanBlocks = 4096;   // get_game_moves: blocks after the opening
inline constexpr std::uint64_t kExplorerMaxLossPoints = 512;     // get_loss_curve: points (evenly thinned)

// Asks peers for a blob in the background (Node::FetchBlobFromPeers).
using BlobFetcher = std::function<Status(const Hash256&)>;

// list_blocks, list_accounts, get_bounty_timeline, get_game_moves, get_loss_curve.
// `fetch_blob` is only ever asked for a log bundle a bounty on chain names.
void RegisterExplorerRpc(net::RpcServer& rpc, Chain& chain, BlobFetcher fetch_blob);

// GET / and /static/* from the embedded files.
void ServeExplorer(net::RpcServer& rpc);

}  // namespace vt::node
