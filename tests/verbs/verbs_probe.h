// verbs_probe's shared pieces (tests/verbs/verbs_probe.cc): its flags, the
// JSON lines it prints, the info files peers meet through, the data
// pattern, and the setup of one client's objects and RC QPs on a daemon.
#ifndef ROCEMU_TESTS_VERBS_VERBS_PROBE_H_
#define ROCEMU_TESTS_VERBS_VERBS_PROBE_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

#include "absl/flags/declare.h"
#include "verbs/rocemu_verbs.h"

ABSL_DECLARE_FLAG(std::string, socket);
ABSL_DECLARE_FLAG(std::string, socket2);
ABSL_DECLARE_FLAG(std::string, dir);
ABSL_DECLARE_FLAG(std::string, name);
ABSL_DECLARE_FLAG(std::string, peer);
ABSL_DECLARE_FLAG(uint32_t, seed);
ABSL_DECLARE_FLAG(uint32_t, size);
ABSL_DECLARE_FLAG(uint32_t, window);
ABSL_DECLARE_FLAG(int, mtu);
ABSL_DECLARE_FLAG(int, timeout);
ABSL_DECLARE_FLAG(int, retry_cnt);
ABSL_DECLARE_FLAG(bool, expect_error);
ABSL_DECLARE_FLAG(bool, zero_dmac);
ABSL_DECLARE_FLAG(int, seconds);

namespace rocemu::verbs::probe {

constexpr uint32_t kMsgMagic = 0x52505242;  // "RPRB"
constexpr uint32_t kFlagEnd = 1;
constexpr size_t kHeader = 16;  // magic, flags, seq

// Exit statuses: 0 all checks held, 1 a check failed, 2 usage or setup.
constexpr int kOk = 0, kCheckFailed = 1, kSetupFailed = 2, kRefused = 3;

// Info files: "key value" lines, written to a temporary name and renamed
// so that a reader never sees half of one.
using Info = std::map<std::string, std::string>;

// Where a QP of ours can be reached.
struct Endpoint {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint8_t gid[16] = {};
  uint8_t mac[6] = {};
};

// One client's objects on one daemon.
struct Side {
  rocemu_context* ctx = nullptr;
  rocemu_pd* pd = nullptr;
  rocemu_buf* buf = nullptr;
  rocemu_mr* mr = nullptr;
  rocemu_cq* cq = nullptr;
  rocemu_port_attr port{};

  uint8_t* base() const { return static_cast<uint8_t*>(buf->addr); }
  uint64_t addr(size_t off) const {
    return reinterpret_cast<uint64_t>(base() + off);
  }
};

constexpr int kAllAccess = ROCEMU_ACCESS_LOCAL_WRITE |
                           ROCEMU_ACCESS_REMOTE_WRITE |
                           ROCEMU_ACCESS_REMOTE_READ;

// CLOCK_MONOTONIC, the clock of Python's time.monotonic(): the test lines
// our events up with the moment it killed a client.
double Now();
// One JSON line on stdout, flushed.
void Emit(const std::string& json);
// A setup step failed: its JSON line, then exit(kSetupFailed).
[[noreturn]] void Die(const std::string& what, int err);

uint8_t PatternByte(uint32_t seed, uint64_t seq, size_t i);
void FillPattern(uint8_t* p, size_t len, uint32_t seed, uint64_t seq);
bool IsPattern(const uint8_t* p, size_t len, uint32_t seed, uint64_t seq);

std::string Hex(const uint8_t* p, size_t n);
bool Unhex(const std::string& s, uint8_t* out, size_t n);
bool Exists(const std::string& path);
void WriteInfo(const std::string& path, const Info& info);
Info WaitInfo(const std::string& path, double deadline);
void WaitFile(const std::string& path, double deadline);
uint64_t U64(const Info& info, const std::string& key);
void PutEndpoint(const Endpoint& e, const std::string& prefix, Info* info);
Endpoint GetEndpoint(const Info& info, const std::string& prefix);

Side OpenSide(const std::string& socket, size_t buf_len, int cqe);
rocemu_qp* CreateRcQp(const Side& s, uint32_t send_wr, uint32_t recv_wr);
Endpoint EndpointOf(const Side& s, rocemu_qp* qp);
void ToInit(rocemu_qp* qp);
void ToRts(rocemu_qp* qp, const Endpoint& local, const Endpoint& remote);
void Connect(rocemu_qp* qp, const Endpoint& local, const Endpoint& remote);
std::string WcJson(const rocemu_wc& wc);
// Busy-polls one completion off `cq` (false: none before the deadline).
bool PollOne(rocemu_cq* cq, rocemu_wc* wc, double deadline);
int PostOne(rocemu_qp* qp, int opcode, uint64_t wr_id, uint64_t laddr,
            uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey);
int PostRecv(rocemu_qp* qp, uint64_t wr_id, uint64_t addr, uint32_t len,
             uint32_t lkey);

// (U2) the attacker subcommand (verbs_probe_attacker.cc).
int CmdAttacker();

}  // namespace rocemu::verbs::probe

#endif  // ROCEMU_TESTS_VERBS_VERBS_PROBE_H_
