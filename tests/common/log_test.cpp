#include "common/log.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/ostream_sink.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

namespace vt::log {
namespace {

class LogTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SetSink(std::make_shared<spdlog::sinks::ostream_sink_mt>(m_out));
    ASSERT_TRUE(SetLevels("info").ok());
  }
  void TearDown() override { SetSink(std::make_shared<spdlog::sinks::ostream_sink_mt>(std::cerr)); }

  std::ostringstream m_out;
};

TEST_F(LogTest, LineFormat) {
  Get("net").info("peer connected addr={} height={}", "127.0.0.1:9000", 42);
  const std::string line = m_out.str();
  // time [component:level] message key=value, UTC with milliseconds.
  const std::regex format(R"(^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[net:info\] )"
                          R"(peer connected addr=127\.0\.0\.1:9000 height=42\n$)");
  EXPECT_TRUE(std::regex_match(line, format)) << line;
}

// A crash (kill -9) must lose no line: every line, info included, reaches
// the file as it is written, not when a buffer fills or the process exits.
TEST(LogFlush, EveryLineReachesTheFileAtOnce) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("vt-log-flush-" + std::to_string(::getpid()) + ".log");
  std::filesystem::remove(path);
  SetSink(std::make_shared<spdlog::sinks::basic_file_sink_mt>(path.string()));
  ASSERT_TRUE(SetLevels("info").ok());
  for (int i = 0; i < 3; ++i) {
    Get("flushcheck").info("line number={}", i);
    std::ifstream in(path);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("line number=" + std::to_string(i)), std::string::npos) << "line " << i << " not flushed";
  }
  SetSink(std::make_shared<spdlog::sinks::ostream_sink_mt>(std::cerr));
  std::filesystem::remove(path);
}

TEST_F(LogTest, SameLoggerForSameComponent) {
  EXPECT_EQ(&Get("vm"), &Get("vm"));
  EXPECT_NE(&Get("vm"), &Get("net"));
  EXPECT_EQ(Get("vm").name(), "vm");
}

TEST_F(LogTest, PerComponentLevels) {
  ASSERT_TRUE(SetLevels("net=debug, warn").ok());
  EXPECT_TRUE(Get("net").should_log(spdlog::level::debug));
  EXPECT_FALSE(Get("net").should_log(spdlog::level::trace));
  EXPECT_FALSE(Get("vm").should_log(spdlog::level::info));
  EXPECT_TRUE(Get("vm").should_log(spdlog::level::warn));
  // Loggers created after the spec follow it too.
  EXPECT_FALSE(Get("fresh-component").should_log(spdlog::level::info));

  Get("vm").info("hidden");
  Get("net").debug("shown");
  const std::string out = m_out.str();
  EXPECT_EQ(out.find("hidden"), std::string::npos) << out;
  EXPECT_NE(out.find("[net:debug] shown"), std::string::npos) << out;
}

TEST_F(LogTest, LevelNames) {
  ASSERT_TRUE(SetLevels("a=trace,b=warning,c=error,d=critical,e=off").ok());
  EXPECT_TRUE(Get("a").should_log(spdlog::level::trace));
  EXPECT_TRUE(Get("b").should_log(spdlog::level::warn));
  EXPECT_FALSE(Get("c").should_log(spdlog::level::warn));
  EXPECT_TRUE(Get("d").should_log(spdlog::level::critical));
  EXPECT_FALSE(Get("e").should_log(spdlog::level::critical));
}

TEST_F(LogTest, BadSpecChangesNothing) {
  ASSERT_TRUE(SetLevels("net=debug").ok());
  for (const char* bad : {"loud", "net=loud", "=debug", "net=debug,verbose"}) {
    const Status s = SetLevels(bad);
    EXPECT_TRUE(s.is_invalid()) << bad;
    EXPECT_EQ(s.reason(), "log-bad-spec") << bad;
  }
  EXPECT_TRUE(Get("net").should_log(spdlog::level::debug));
}

// Run by CTest as common_log_env_test with VT_LOG=envtest=trace,error.
TEST(LogEnv, LevelsFromEnvironment) {
  const char* env = std::getenv("VT_LOG");
  if (env == nullptr || std::string(env) != "envtest=trace,error")
    GTEST_SKIP() << "runs only under CTest's common_log_env_test (VT_LOG=envtest=trace,error)";
  EXPECT_TRUE(Get("envtest").should_log(spdlog::level::trace));
  EXPECT_FALSE(Get("other").should_log(spdlog::level::warn));
  EXPECT_TRUE(Get("other").should_log(spdlog::level::err));
}

}  // namespace
}  // namespace vt::log
