// Two RNICs wired back to back in the test's process, each behind a session
// server on its own socket in a scratch directory, frames moved in real time
// (a hook may drop or rewrite them), and a tool's server and client run as
// child processes against them: the harness of the end-to-end tests of
// rocemu-perf (verbs/tools/perf_test.cc) and rocemu-pingpong
// (tests/interop/pingpong_e2e_test.cc). No root, no daemon.
#ifndef ROCEMU_TESTS_VERBS_TOOL_PAIR_H_
#define ROCEMU_TESTS_VERBS_TOOL_PAIR_H_

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "nic/rnic.h"
#include "tests/temp_dir.h"
#include "verbs/server/session_server.h"

namespace rocemu::verbs::testing {

struct ToolChild {
  pid_t pid = -1;
  std::string out_path;  // its stdout and stderr
  int status = -1;       // waitpid status once it exited
};

struct ToolOutcome {
  int server_exit = -1, client_exit = -1;  // 128: killed or crashed
  std::string server_out, client_out;
};

// What a frame hook may do with a frame on its way: let it pass (true) or
// drop it; it may also rewrite it in place.
using FrameHook = std::function<bool(bool a_to_b, uint8_t* f, size_t len)>;

class ToolPair {
 public:
  ToolPair() = default;
  ToolPair(const ToolPair&) = delete;
  ToolPair& operator=(const ToolPair&) = delete;
  ~ToolPair() { TearDown(); }

  // The tool's binary comes from the environment variable `bin_env`;
  // `a_name`/`b_name` name the devices (empty: the server's default).
  void SetUp(const char* bin_env, const char* tag, const nic::RnicConfig& ca,
             const nic::RnicConfig& cb, const std::string& a_name = "",
             const std::string& b_name = "") {
    const char* bin = std::getenv(bin_env);
    ASSERT_NE(bin, nullptr) << bin_env << " must name the tool's binary";
    bin_ = bin;
    what_ = tag;
    ASSERT_TRUE(tmp_.Make(what_ + "-test"));
    a_ = std::make_unique<nic::Rnic>(ca);
    b_ = std::make_unique<nic::Rnic>(cb);
    SessionServerOptions oa, ob;
    oa.socket_path = tmp_.path() + "/a.sock";
    ob.socket_path = tmp_.path() + "/b.sock";
    if (!a_name.empty()) oa.device_name = a_name;
    if (!b_name.empty()) ob.device_name = b_name;
    // The tools give an all-zero destination MAC: resolved here, as the
    // daemon does from its neighbour cache.
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

  void TearDown() {
    sa_.reset();
    sb_.reset();
    tmp_.Remove();
  }

  const std::string& dir() const { return tmp_.path(); }
  std::string a_socket() const { return tmp_.path() + "/a.sock"; }
  std::string b_socket() const { return tmp_.path() + "/b.sock"; }
  // A TCP port for one run's exchange, different per process and run.
  int NextPort(int base) { return base + (getpid() * 7 + runs_++) % 20000; }

  // The tool with `args`, its output to <dir>/<tag>.out.
  ToolChild Spawn(std::vector<std::string> args, const std::string& tag) {
    ToolChild c;
    c.out_path = tmp_.path() + "/" + tag + ".out";
    args.insert(args.begin(), bin_);
    std::vector<char*> argv;
    for (std::string& s : args) argv.push_back(s.data());
    argv.push_back(nullptr);
    c.pid = fork();
    if (c.pid == 0) {
      const int fd =
          open(c.out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      dup2(fd, 1);
      dup2(fd, 2);
      execv(bin_.c_str(), argv.data());
      _exit(127);
    }
    return c;
  }

  // Serves both session servers and moves frames until `done` (60 s at
  // most: then the children are killed and the test fails).
  void Pump(const std::function<bool()>& done, const FrameHook& hook,
            std::initializer_list<ToolChild*> children) {
    const uint64_t deadline = NowNs() + 60'000'000'000ull;
    nic::TxFrame tx[16];
    while (!done()) {
      sa_->Poll();
      sb_->Poll();
      for (int dir = 0; dir < 2; ++dir) {
        nic::Rnic& from = dir == 0 ? *a_ : *b_;
        nic::Rnic& to = dir == 0 ? *b_ : *a_;
        for (int i = 0; i < 16; ++i) tx[i] = {frames_[i].data(), 9216, 0, 0};
        const size_t n = from.Transmit(0, {tx, 16}, NowNs());
        for (size_t i = 0; i < n; ++i) {
          if (hook && !hook(dir == 0, tx[i].data, tx[i].len)) continue;
          nic::RxFrame rx{tx[i].data, tx[i].len};
          to.Receive(0, {&rx, 1}, NowNs());
        }
      }
      for (ToolChild* ch : children) {
        int st = 0;
        if (ch->status < 0 && waitpid(ch->pid, &st, WNOHANG) == ch->pid) {
          ch->status = st;
        }
      }
      if (NowNs() > deadline) {
        for (ToolChild* ch : children) {
          if (ch->status < 0) {
            kill(ch->pid, SIGKILL);
            waitpid(ch->pid, &ch->status, 0);
          }
        }
        ADD_FAILURE() << what_ << " did not finish in 60 s";
        return;
      }
    }
  }

  // Pumps until both exited; their exit codes and outputs.
  ToolOutcome Finish(ToolChild& s, ToolChild& c, const FrameHook& hook = {}) {
    Pump([&] { return s.status >= 0 && c.status >= 0; }, hook, {&s, &c});
    ToolOutcome o;
    o.server_exit = WIFEXITED(s.status) ? WEXITSTATUS(s.status) : 128;
    o.client_exit = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128;
    o.server_out = Slurp(s.out_path);
    o.client_out = Slurp(c.out_path);
    return o;
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

  static uint64_t NowNs() {
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return static_cast<uint64_t>(t.tv_sec) * 1000000000ull +
           static_cast<uint64_t>(t.tv_nsec);
  }

 private:
  test_support::TempDir tmp_;
  std::string bin_, what_;
  std::unique_ptr<nic::Rnic> a_, b_;
  std::unique_ptr<SessionServer> sa_, sb_;
  std::vector<std::vector<uint8_t>> frames_;
  int runs_ = 0;
};

}  // namespace rocemu::verbs::testing

#endif  // ROCEMU_TESTS_VERBS_TOOL_PAIR_H_
