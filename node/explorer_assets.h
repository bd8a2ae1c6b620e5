#pragma once
// The explorer's pages (node/explorer/*), embedded at build time: CMake
// (cmake/EmbedFiles.cmake) writes explorer_assets.cpp into the build tree
// from the files, so vt-node serves them with nothing to fetch or install.

#include <span>
#include <string_view>

namespace vt::node {

struct ExplorerAsset {
  std::string_view path;          // "/static/app.js"
  std::string_view content_type;  // from the file's extension
  std::string_view body;
};

std::span<const ExplorerAsset> ExplorerAssets();

}  // namespace vt::node
