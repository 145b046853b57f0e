// rocemu-perf: its pattern, statistics and command line, and the tool
// itself end to end: two RNICs wired back to back in this process, each
// behind a session server on its own socket, frames moved in real time,
// and the real rocemu-perf binary (ROCEMU_PERF) run as server and client
// against them.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "nic/gid_table.h"
#include "nic/rnic.h"
#include "tests/verbs/tool_pair.h"
#include "verbs/server/session_server.h"
#include "verbs/tools/perf_clock.h"
#include "verbs/tools/perf_options.h"
#include "verbs/tools/perf_pattern.h"
#include "verbs/tools/perf_stats.h"

namespace rocemu::verbs::perf {
namespace {

TEST(PerfPattern, EveryFlippedByteIsFoundAtItsOffset) {
  for (size_t len : {1, 2, 7, 8, 9, 63, 64, 65, 4099}) {
    std::vector<uint8_t> m(len);
    FillMessage(7, 41, m.data(), len);
    EXPECT_EQ(CheckMessage(7, 41, m.data(), len), -1) << len;
    for (size_t off = 0; off < len; off += (len > 100 ? 97 : 1)) {
      m[off] ^= 0x10;
      EXPECT_EQ(CheckMessage(7, 41, m.data(), len), static_cast<int64_t>(off))
          << len;
      m[off] ^= 0x10;
    }
    m[len - 1] ^= 1;
    EXPECT_EQ(CheckMessage(7, 41, m.data(), len),
              static_cast<int64_t>(len - 1));
  }
}

TEST(PerfPattern, OtherMessageOrSeedDoesNotPass) {
  std::vector<uint8_t> m(256);
  FillMessage(1, 5, m.data(), m.size());
  EXPECT_GE(CheckMessage(1, 6, m.data(), m.size()), 0);
  EXPECT_GE(CheckMessage(2, 5, m.data(), m.size()), 0);
  for (uint64_t i = 0; i < 1000; ++i) {
    EXPECT_NE(Marker(i), Marker(i + 1));
    EXPECT_NE(Marker(i), 0);
  }
}

TEST(PerfPattern, AtomicSequences) {
  for (uint32_t w = 0; w < 4; ++w) {
    for (uint64_t k = 0; k < 100; ++k) {
      EXPECT_EQ(FetchAddValue(3, w, k + 1) - FetchAddValue(3, w, k),
                AtomicAddend(w));
      EXPECT_NE(CasValue(3, w, k), CasValue(3, w, k + 1));
    }
    EXPECT_EQ(CasValue(3, w, 0), AtomicInitial(3, w));
    EXPECT_EQ(FetchAddValue(3, w, 0), AtomicInitial(3, w));
  }
}

TEST(PerfStats, LatencyPercentiles) {
  std::vector<int64_t> s(1000);
  std::iota(s.begin(), s.end(), 1);  // 1..1000 ns
  std::shuffle(s.begin(), s.end(), std::mt19937(1));
  const LatResult r = ComputeLat(64, s);
  EXPECT_EQ(r.iterations, 1000u);
  EXPECT_DOUBLE_EQ(r.min_us, 0.001);
  EXPECT_DOUBLE_EQ(r.max_us, 1.0);
  EXPECT_DOUBLE_EQ(r.p50_us, 0.5);
  EXPECT_DOUBLE_EQ(r.typical_us, 0.5);
  EXPECT_DOUBLE_EQ(r.p99_us, 0.99);
  EXPECT_DOUBLE_EQ(r.p999_us, 0.999);
  EXPECT_NEAR(r.avg_us, 0.5005, 1e-9);
  EXPECT_TRUE(std::is_sorted(s.begin(), s.end()));
}

TEST(PerfStats, BandwidthAverageAndPeak) {
  // 1000-byte messages: 10 every microsecond, then 10 in the last 10 us.
  std::vector<int64_t> done;
  for (int i = 1; i <= 10; ++i) done.push_back(i * 100);
  for (int i = 1; i <= 10; ++i) done.push_back(1000 + i * 1000);
  const BwResult r = ComputeBw(1000, 0, done, 10);
  EXPECT_EQ(r.iterations, 20u);
  EXPECT_DOUBLE_EQ(r.seconds, 11e-6);
  EXPECT_NEAR(r.avg_gbps, 20 * 1000 * 8 / 11e-6 / 1e9, 1e-9);
  EXPECT_NEAR(r.mpps, 20 / 11e-6 / 1e6, 1e-9);
  EXPECT_NEAR(r.peak_gbps, 10 * 1000 * 8 / 1e-6 / 1e9, 1e-9);
}

absl::StatusOr<PerfOptions> Parse(std::vector<std::string> args) {
  args.insert(args.begin(), "rocemu-perf");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  return ParsePerfOptions(static_cast<int>(args.size()), argv.data());
}

TEST(PerfOptions, DefaultsFollowPerftest) {
  absl::StatusOr<PerfOptions> o = Parse({"write_bw"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_TRUE(o->is_server());
  EXPECT_EQ(o->sizes, std::vector<uint64_t>{65536});
  EXPECT_EQ(o->iters, 5000u);
  EXPECT_EQ(o->tx_depth, 128u);
  EXPECT_EQ(o->tcp_port, 18515);
  o = Parse({"send_lat", "10.0.0.2"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->server_ip, "10.0.0.2");
  EXPECT_EQ(o->sizes, std::vector<uint64_t>{2});
  EXPECT_EQ(o->tx_depth, 1u);
  EXPECT_EQ(o->mode, Mode::kLat);
  EXPECT_EQ(o->verb, Verb::kSend);
}

TEST(PerfOptions, SizesRangesAndAtomics) {
  absl::StatusOr<PerfOptions> o = Parse({"read_bw", "-a"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->sizes.size(), 23u);
  EXPECT_EQ(o->sizes.front(), 2u);
  EXPECT_EQ(o->sizes.back(), 1u << 23);
  o = Parse({"write_bw", "-a", "64:1K", "-q", "4", "--verify",
             "--memory=malloc", "-s", "1"});
  ASSERT_TRUE(o.ok()) << o.status();
  EXPECT_EQ(o->sizes, (std::vector<uint64_t>{64, 128, 256, 512, 1024}));
  EXPECT_EQ(o->num_qps, 4u);
  EXPECT_TRUE(o->verify);
  EXPECT_EQ(o->memory, Memory::kMalloc);
  o = Parse({"atomic_bw", "-A", "CMP_AND_SWAP", "host"});
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->atomic_op, AtomicOp::kCmpAndSwap);
  EXPECT_EQ(o->sizes, std::vector<uint64_t>{8});
  EXPECT_FALSE(Parse({"atomic_lat", "-s", "64"}).ok());
  EXPECT_FALSE(Parse({"write_bw", "-m", "1500"}).ok());
  EXPECT_FALSE(Parse({"write_bw", "-s", "0"}).ok());
  EXPECT_FALSE(Parse({"write_bw", "-q", "0"}).ok());
  EXPECT_FALSE(Parse({"write_bw", "-a", "9:3"}).ok());
  EXPECT_FALSE(Parse({"write_bw", "--memory=huge"}).ok());
  EXPECT_FALSE(Parse({"write_bw", "a", "b"}).ok());
  EXPECT_FALSE(Parse({"rdma_bw"}).ok());
}

// --- end to end ------------------------------------------------------------

nic::RnicConfig Config(uint8_t id) {
  nic::RnicConfig c;
  c.mac = {0x02, 0, 0, 0, 0x7f, id};
  c.gid = nic::GidFromIpv4(10, 9, 0, id);
  c.port.active_mtu = nic::Mtu::k4096;
  return c;
}

// The lines of a tool's output that are JSON objects (--json's results),
// parsed; the other lines are skipped.
std::vector<nlohmann::json> JsonLines(const std::string& out) {
  std::vector<nlohmann::json> lines;
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    nlohmann::json j = nlohmann::json::parse(out.substr(at, end - at), nullptr,
                                             /*allow_exceptions=*/false);
    if (j.is_object()) lines.push_back(std::move(j));
    at = end + 1;
  }
  return lines;
}

class PerfEndToEnd : public ::testing::Test {
 protected:
  using Outcome = verbs::testing::ToolOutcome;

  void SetUp() override {
    pair_.SetUp("ROCEMU_PERF", "perf", Config(1), Config(2), "rocemu_pa",
                "rocemu_pb");
    // Where the children look for devices by name.
    setenv("ROCEMU_VERBS_DIR", pair_.dir().c_str(), 1);
  }

  Outcome RunPair(const std::vector<std::string>& server_args,
                  const std::vector<std::string>& client_args) {
    const std::string port = std::to_string(pair_.NextPort(20000));
    // Defaults first so that a test's own -d wins (getopt: last one).
    std::vector<std::string> s = server_args, c = client_args;
    // --yield: this process polls the RNICs on one of the 2 cores.
    s.insert(s.begin() + 1, {"-p", port, "-d", pair_.a_socket(), "--timeout",
                             "20", "--yield"});
    c.insert(c.begin() + 1, {"-p", port, "-d", pair_.b_socket(), "--timeout",
                             "20", "--yield"});
    c.push_back("127.0.0.1");
    verbs::testing::ToolChild sc = pair_.Spawn(s, "server");
    verbs::testing::ToolChild cc = pair_.Spawn(c, "client");
    return pair_.Finish(sc, cc);
  }

  // Runs one verified test and checks both sides' JSON lines.
  void Verified(std::vector<std::string> args, uint64_t bytes, uint64_t iters) {
    args.insert(args.end(),
                {"--verify", "--json", "-n", std::to_string(iters)});
    const Outcome o = RunPair(args, args);
    SCOPED_TRACE(args[0]);
    ASSERT_EQ(o.server_exit, 0) << o.server_out;
    ASSERT_EQ(o.client_exit, 0) << o.client_out;
    // One size: one result line each side.
    std::vector<nlohmann::json> client = JsonLines(o.client_out);
    ASSERT_EQ(client.size(), 1u) << o.client_out;
    EXPECT_EQ(client[0]["test"], args[0]) << o.client_out;
    EXPECT_EQ(client[0]["bytes"], bytes) << o.client_out;
    EXPECT_EQ(client[0]["iterations"], iters) << o.client_out;
    EXPECT_EQ(client[0]["verified"], true) << o.client_out;
    EXPECT_EQ(client[0]["peer_iterations"], iters) << o.client_out;
    std::vector<nlohmann::json> server = JsonLines(o.server_out);
    ASSERT_EQ(server.size(), 1u) << o.server_out;
    EXPECT_EQ(server[0]["role"], "server") << o.server_out;
    EXPECT_EQ(server[0]["iterations"], iters) << o.server_out;
  }

  verbs::testing::ToolPair pair_;
};

TEST_F(PerfEndToEnd, WriteReadSendBandwidthVerified) {
  Verified({"write_bw", "-s", "64"}, 64, 300);
  Verified({"write_bw", "-s", "65536", "-q", "2", "-t", "8"}, 65536, 40);
  Verified({"read_bw", "-s", "10000", "-t", "4"}, 10000, 40);
  Verified({"send_bw", "-s", "5000", "-q", "3"}, 5000, 60);
}

TEST_F(PerfEndToEnd, AtomicsVerified) {
  Verified({"atomic_bw", "-q", "2"}, 8, 200);
  Verified({"atomic_bw", "-A", "CMP_AND_SWAP", "-q", "3"}, 8, 200);
  Verified({"atomic_lat", "-A", "CMP_AND_SWAP"}, 8, 30);
}

TEST_F(PerfEndToEnd, LatencyVerified) {
  Verified({"write_lat", "-s", "4100"}, 4100, 20);
  Verified({"send_lat", "-s", "64"}, 64, 20);
  Verified({"read_lat", "-s", "64"}, 64, 20);
}

TEST_F(PerfEndToEnd, DevicesByNameAndMallocMemory) {
  // -d takes the daemon's device name, as perftest's takes an ibv device;
  // --memory=malloc registers plain process memory.
  Verified({"write_bw", "-s", "8192", "--memory=malloc"}, 8192, 50);
  const Outcome o = RunPair({"read_bw", "-s", "3000", "-n", "30", "--verify",
                             "--json", "--memory=malloc", "-d", "rocemu_pa"},
                            {"read_bw", "-s", "3000", "-n", "30", "--verify",
                             "--json", "--memory=malloc", "-d", "rocemu_pb"});
  ASSERT_EQ(o.server_exit, 0) << o.server_out;
  ASSERT_EQ(o.client_exit, 0) << o.client_out;
  std::vector<nlohmann::json> client = JsonLines(o.client_out);
  ASSERT_EQ(client.size(), 1u) << o.client_out;
  EXPECT_EQ(client[0]["memory"], "malloc") << o.client_out;
  EXPECT_EQ(client[0]["peer_iterations"], 30) << o.client_out;
  const Outcome bad = RunPair({"write_bw", "-d", "rocemu_nope"}, {"write_bw"});
  EXPECT_EQ(bad.server_exit, 1);
  EXPECT_NE(bad.server_out.find("device rocemu_nope not found"),
            std::string::npos)
      << bad.server_out;
}

TEST_F(PerfEndToEnd, SizeSweepPrintsOneLinePerSize) {
  const Outcome o = RunPair({"write_bw", "-a", "1K:8K", "-n", "10"},
                            {"write_bw", "-a", "1K:8K", "-n", "10"});
  ASSERT_EQ(o.client_exit, 0) << o.client_out;
  ASSERT_EQ(o.server_exit, 0) << o.server_out;
  for (const char* s : {"\n 1024 ", "\n 2048 ", "\n 4096 ", "\n 8192 "}) {
    EXPECT_NE(o.client_out.find(s), std::string::npos) << o.client_out;
  }
  EXPECT_NE(o.client_out.find("BW average[Gb/sec]"), std::string::npos);
}

TEST_F(PerfEndToEnd, MismatchedTestsFailOnBothSides) {
  const Outcome o = RunPair({"write_bw"}, {"read_bw"});
  EXPECT_EQ(o.server_exit, 1);
  EXPECT_EQ(o.client_exit, 1);
  EXPECT_NE(o.server_out.find("the client runs read_bw"), std::string::npos)
      << o.server_out;
  EXPECT_NE(o.client_out.find("peer failed"), std::string::npos)
      << o.client_out;
}

TEST_F(PerfEndToEnd, NoDaemonIsAClearError) {
  const Outcome o =
      RunPair({"write_bw", "-d", pair_.dir() + "/nothing.sock"}, {"write_bw"});
  EXPECT_EQ(o.server_exit, 1);
  EXPECT_EQ(o.client_exit, 1);
  EXPECT_NE(o.server_out.find("rocemu_open_device"), std::string::npos)
      << o.server_out;
}

}  // namespace
}  // namespace rocemu::verbs::perf
