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
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "nic/gid_table.h"
#include "nic/rnic.h"
#include "verbs/session_server.h"
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

uint64_t NowNs() { return static_cast<uint64_t>(MonotonicNs()); }

nic::RnicConfig Config(uint8_t id) {
  nic::RnicConfig c;
  c.mac = {0x02, 0, 0, 0, 0x7f, id};
  c.gid = nic::GidFromIpv4(10, 9, 0, id);
  c.port.active_mtu = nic::Mtu::k4096;
  return c;
}

struct Child {
  pid_t pid = -1;
  std::string out_path;
  int status = -1;
};

class PerfEndToEnd : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* bin = std::getenv("ROCEMU_PERF");
    ASSERT_NE(bin, nullptr) << "ROCEMU_PERF must name the rocemu-perf binary";
    bin_ = bin;
    char tmpl[] = "/tmp/rocemu-perf-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    const nic::RnicConfig ca = Config(1), cb = Config(2);
    a_ = std::make_unique<nic::Rnic>(ca);
    b_ = std::make_unique<nic::Rnic>(cb);
    SessionServerOptions oa, ob;
    oa.socket_path = dir_ + "/a.sock";
    ob.socket_path = dir_ + "/b.sock";
    oa.device_name = "rocemu_pa";
    ob.device_name = "rocemu_pb";
    // Where the children look for devices by name.
    setenv("ROCEMU_VERBS_DIR", dir_.c_str(), 1);
    // The tools give an all-zero destination MAC: resolved here.
    oa.resolve_dmac = [m = cb.mac](const nic::Gid&) {
      return std::optional<protocol::MacAddr>(m);
    };
    ob.resolve_dmac = [m = ca.mac](const nic::Gid&) {
      return std::optional<protocol::MacAddr>(m);
    };
    auto sa = SessionServer::Create(*a_, oa);
    auto sb = SessionServer::Create(*b_, ob);
    ASSERT_TRUE(sa.ok()) << sa.status();
    ASSERT_TRUE(sb.ok()) << sb.status();
    sa_ = *std::move(sa);
    sb_ = *std::move(sb);
    frames_.assign(16, std::vector<uint8_t>(9216));
  }

  void TearDown() override {
    sa_.reset();
    sb_.reset();
    std::string cmd = "rm -rf " + dir_;
    if (!dir_.empty()) {
      EXPECT_EQ(std::system(cmd.c_str()), 0);
    }
  }

  Child Spawn(const std::vector<std::string>& args, const std::string& tag) {
    Child c;
    c.out_path = dir_ + "/" + tag + ".out";
    c.pid = fork();
    if (c.pid == 0) {
      const int fd =
          open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<std::string> full = {bin_};
      full.insert(full.end(), args.begin(), args.end());
      std::vector<char*> argv;
      for (std::string& s : full) argv.push_back(s.data());
      argv.push_back(nullptr);
      execv(bin_.c_str(), argv.data());
      _exit(127);
    }
    return c;
  }

  // Moves frames and serves both daemons' sessions until both children
  // exit (or 60 s: then they are killed and the test fails).
  void Pump(Child& s, Child& c) {
    const uint64_t deadline = NowNs() + 60'000'000'000ull;
    nic::TxFrame tx[16];
    while (s.status < 0 || c.status < 0) {
      sa_->Poll();
      sb_->Poll();
      for (int dir = 0; dir < 2; ++dir) {
        nic::Rnic& from = dir == 0 ? *a_ : *b_;
        nic::Rnic& to = dir == 0 ? *b_ : *a_;
        for (int i = 0; i < 16; ++i) {
          tx[i] = {frames_[i].data(), 9216, 0, 0};
        }
        const size_t n = from.Transmit(0, {tx, 16}, NowNs());
        for (size_t i = 0; i < n; ++i) {
          nic::RxFrame rx{tx[i].data, tx[i].len};
          to.Receive(0, {&rx, 1}, NowNs());
        }
      }
      for (Child* ch : {&s, &c}) {
        int st;
        if (ch->status < 0 && waitpid(ch->pid, &st, WNOHANG) == ch->pid) {
          ch->status = st;
        }
      }
      if (NowNs() > deadline) {
        for (Child* ch : {&s, &c}) {
          if (ch->status < 0) {
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, &ch->status, 0);
          }
        }
        ADD_FAILURE() << "rocemu-perf did not finish in 60 s";
      }
    }
  }

  static std::string Slurp(const std::string& path) {
    std::string out;
    FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return out;
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) out.append(buf, n);
    std::fclose(f);
    return out;
  }

  struct Outcome {
    int server_exit = -1, client_exit = -1;
    std::string server_out, client_out;
  };

  Outcome RunPair(const std::vector<std::string>& server_args,
                  const std::vector<std::string>& client_args) {
    const std::string port =
        std::to_string(20000 + (getpid() * 7 + runs_++) % 20000);
    // Defaults first so that a test's own -d wins (getopt: last one).
    std::vector<std::string> s = server_args, c = client_args;
    // --yield: this process polls the RNICs on one of the 2 cores.
    s.insert(s.begin() + 1, {"-p", port, "-d", dir_ + "/a.sock", "--timeout",
                             "20", "--yield"});
    c.insert(c.begin() + 1, {"-p", port, "-d", dir_ + "/b.sock", "--timeout",
                             "20", "--yield"});
    c.push_back("127.0.0.1");
    Child sc = Spawn(s, "server");
    Child cc = Spawn(c, "client");
    Pump(sc, cc);
    Outcome o;
    o.server_exit = WIFEXITED(sc.status) ? WEXITSTATUS(sc.status) : 128;
    o.client_exit = WIFEXITED(cc.status) ? WEXITSTATUS(cc.status) : 128;
    o.server_out = Slurp(sc.out_path);
    o.client_out = Slurp(cc.out_path);
    return o;
  }

  // Runs one verified test and checks both sides' JSON lines.
  void Verified(std::vector<std::string> args, uint64_t bytes, uint64_t iters) {
    args.insert(args.end(),
                {"--verify", "--json", "-n", std::to_string(iters)});
    const Outcome o = RunPair(args, args);
    SCOPED_TRACE(args[0]);
    ASSERT_EQ(o.server_exit, 0) << o.server_out;
    ASSERT_EQ(o.client_exit, 0) << o.client_out;
    const std::string want_bytes = "\"bytes\":" + std::to_string(bytes) + ",";
    const std::string want_iters =
        "\"iterations\":" + std::to_string(iters) + ",";
    EXPECT_NE(o.client_out.find("{\"test\":\"" + args[0] + "\""),
              std::string::npos)
        << o.client_out;
    EXPECT_NE(o.client_out.find(want_bytes), std::string::npos) << o.client_out;
    EXPECT_NE(o.client_out.find(want_iters), std::string::npos) << o.client_out;
    EXPECT_NE(o.client_out.find("\"verified\":true"), std::string::npos);
    EXPECT_NE(o.client_out.find("\"peer_iterations\":" + std::to_string(iters)),
              std::string::npos)
        << o.client_out;
    EXPECT_NE(o.server_out.find("\"role\":\"server\""), std::string::npos);
    EXPECT_NE(o.server_out.find(want_iters), std::string::npos) << o.server_out;
  }

  std::string bin_, dir_;
  std::unique_ptr<nic::Rnic> a_, b_;
  std::unique_ptr<SessionServer> sa_, sb_;
  std::vector<std::vector<uint8_t>> frames_;
  int runs_ = 0;
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
  EXPECT_NE(o.client_out.find("\"memory\":\"malloc\""), std::string::npos);
  EXPECT_NE(o.client_out.find("\"peer_iterations\":30"), std::string::npos);
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
      RunPair({"write_bw", "-d", dir_ + "/nothing.sock"}, {"write_bw"});
  EXPECT_EQ(o.server_exit, 1);
  EXPECT_EQ(o.client_exit, 1);
  EXPECT_NE(o.server_out.find("rocemu_open_device"), std::string::npos)
      << o.server_out;
}

}  // namespace
}  // namespace rocemu::verbs::perf
