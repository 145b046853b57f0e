// verbs_probe: a small client of the rocemu verbs library that the net
// suite's scripts drive against real rocemud daemons
// (tests/emulator/net_verbs_robust_test.py).
//
// Peers meet through files in --dir: each side writes <name>.info (its QPN,
// PSN, GID, MAC, keys, addresses) and waits for the peer's, then writes
// <name>.rts once its QP is in RTS and waits for the peer's before sending
// (a SEND reaching a QP still in RTR's predecessor states would be dropped
// and burn retries). Results are JSON lines on stdout; the exit status is 0
// only when everything the subcommand checks held.
//
//   open     open the device and report the client id or the errno.
//   stream   RC SENDs both ways, a window in flight, every received message
//            checked byte for byte; stops cleanly when <dir>/stop exists,
//            or (--expect_error) ends at the first error completion.
//   victim   (U1) an MR full of a pattern and an RC QP pair across the two
//            daemons; when <dir>/<name>.stop exists, checks that its memory,
//            QP and MR are intact and still work.
//   attacker (U2) uses the victim's L_Key, R_Key, QPN and MR keys in every
//            way a client can, each next to a positive control.
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire_protocol.h"

ABSL_FLAG(std::string, socket, "", "verbs socket of the first daemon");
ABSL_FLAG(std::string, socket2, "", "verbs socket of the second daemon");
ABSL_FLAG(std::string, dir, "", "directory where peers exchange their info");
ABSL_FLAG(std::string, name, "", "this side's name");
ABSL_FLAG(std::string, peer, "", "the peer's name (stream) or victim's");
ABSL_FLAG(uint32_t, seed, 1, "seed of this side's data pattern");
ABSL_FLAG(uint32_t, size, 4000, "message size in bytes (stream)");
ABSL_FLAG(uint32_t, window, 16, "SENDs in flight (stream)");
ABSL_FLAG(int, mtu, ROCEMU_MTU_1024, "path MTU code (IBV_MTU_*)");
ABSL_FLAG(int, timeout, 12, "local ACK timeout exponent (4.096 us * 2^t)");
ABSL_FLAG(int, retry_cnt, 3, "transport retries before RETRY_EXC_ERR");
ABSL_FLAG(bool, expect_error, false,
          "stream: end with success at the first error completion");
ABSL_FLAG(bool, zero_dmac, false,
          "leave the address vector's MAC zero: the daemon resolves it");
ABSL_FLAG(int, seconds, 60, "give up (and fail) after this long");

namespace rocemu::verbs {
namespace {

constexpr uint32_t kMsgMagic = 0x52505242;  // "RPRB"
constexpr uint32_t kFlagEnd = 1;
constexpr size_t kHeader = 16;  // magic, flags, seq

// Exit statuses: 0 all checks held, 1 a check failed, 2 usage or setup.
constexpr int kOk = 0, kCheckFailed = 1, kSetupFailed = 2, kRefused = 3;

// CLOCK_MONOTONIC, the clock of Python's time.monotonic(): the test lines
// our events up with the moment it killed a client.
double Now() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + ts.tv_nsec * 1e-9;
}

void Emit(const std::string& json) {
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
}

[[noreturn]] void Die(const std::string& what, int err) {
  Emit(absl::StrFormat(
      R"({"event":"setup_error","what":"%s","errno":%d,"error":"%s"})", what,
      err, std::strerror(err)));
  std::exit(kSetupFailed);
}

uint8_t PatternByte(uint32_t seed, uint64_t seq, size_t i) {
  return static_cast<uint8_t>(seed * 131 + seq * 7 + i * 13 + (i >> 8));
}

void FillPattern(uint8_t* p, size_t len, uint32_t seed, uint64_t seq) {
  for (size_t i = 0; i < len; ++i) p[i] = PatternByte(seed, seq, i);
}

bool IsPattern(const uint8_t* p, size_t len, uint32_t seed, uint64_t seq) {
  for (size_t i = 0; i < len; ++i) {
    if (p[i] != PatternByte(seed, seq, i)) return false;
  }
  return true;
}

std::string Hex(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) absl::StrAppendFormat(&s, "%02x", p[i]);
  return s;
}

bool Unhex(const std::string& s, uint8_t* out, size_t n) {
  if (s.size() != 2 * n) return false;
  for (size_t i = 0; i < n; ++i) {
    unsigned v;
    if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) return false;
    out[i] = static_cast<uint8_t>(v);
  }
  return true;
}

bool Exists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

// Info files: "key value" lines, written to a temporary name and renamed
// so that a reader never sees half of one.
using Info = std::map<std::string, std::string>;

void WriteInfo(const std::string& path, const Info& info) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    for (const auto& [k, v] : info) f << k << ' ' << v << '\n';
    if (!f) Die("write " + tmp, errno);
  }
  if (rename(tmp.c_str(), path.c_str()) != 0) Die("rename " + path, errno);
}

Info WaitInfo(const std::string& path, double deadline) {
  while (!Exists(path)) {
    if (Now() > deadline) Die("waiting for " + path, ETIMEDOUT);
    usleep(10000);
  }
  Info info;
  std::ifstream f(path);
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string k, v;
    if (ls >> k >> v) info[k] = v;
  }
  return info;
}

void WaitFile(const std::string& path, double deadline) {
  while (!Exists(path)) {
    if (Now() > deadline) Die("waiting for " + path, ETIMEDOUT);
    usleep(10000);
  }
}

uint64_t U64(const Info& info, const std::string& key) {
  auto it = info.find(key);
  if (it == info.end()) Die("info has no " + key, EINVAL);
  return std::strtoull(it->second.c_str(), nullptr, 0);
}

// Where a QP of ours can be reached.
struct Endpoint {
  uint32_t qpn = 0;
  uint32_t psn = 0;
  uint8_t gid[16] = {};
  uint8_t mac[6] = {};
};

void PutEndpoint(const Endpoint& e, const std::string& prefix, Info* info) {
  (*info)[prefix + "qpn"] = absl::StrCat(e.qpn);
  (*info)[prefix + "psn"] = absl::StrCat(e.psn);
  (*info)[prefix + "gid"] = Hex(e.gid, 16);
  (*info)[prefix + "mac"] = Hex(e.mac, 6);
}

Endpoint GetEndpoint(const Info& info, const std::string& prefix) {
  Endpoint e;
  e.qpn = static_cast<uint32_t>(U64(info, prefix + "qpn"));
  e.psn = static_cast<uint32_t>(U64(info, prefix + "psn"));
  if (!Unhex(info.at(prefix + "gid"), e.gid, 16) ||
      !Unhex(info.at(prefix + "mac"), e.mac, 6)) {
    Die("bad endpoint in info", EINVAL);
  }
  return e;
}

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

Side OpenSide(const std::string& socket, size_t buf_len, int cqe) {
  Side s;
  s.ctx = rocemu_open_device(socket.c_str());
  if (s.ctx == nullptr) Die("open " + socket, errno);
  if (int e = rocemu_query_port(s.ctx, 1, &s.port); e != 0) {
    Die("query_port", e);
  }
  s.pd = rocemu_alloc_pd(s.ctx);
  if (s.pd == nullptr) Die("alloc_pd", errno);
  s.buf = rocemu_alloc_buf(s.ctx, buf_len);
  if (s.buf == nullptr) Die("alloc_buf", errno);
  s.mr = rocemu_reg_mr(s.pd, s.buf->addr, buf_len, kAllAccess);
  if (s.mr == nullptr) Die("reg_mr", errno);
  s.cq = rocemu_create_cq(s.ctx, cqe, nullptr, nullptr, 0);
  if (s.cq == nullptr) Die("create_cq", errno);
  return s;
}

rocemu_qp* CreateRcQp(const Side& s, uint32_t send_wr, uint32_t recv_wr) {
  rocemu_qp_init_attr init{};
  init.send_cq = s.cq;
  init.recv_cq = s.cq;
  init.cap = {send_wr, recv_wr, 1, 1, 0};
  init.qp_type = ROCEMU_QPT_RC;
  rocemu_qp* qp = rocemu_create_qp(s.pd, &init);
  if (qp == nullptr) Die("create_qp", errno);
  return qp;
}

Endpoint EndpointOf(const Side& s, rocemu_qp* qp) {
  Endpoint e;
  e.qpn = rocemu_qp_num(qp);
  e.psn = (e.qpn * 2654435761u) & 0xFFFFFF;
  std::memcpy(e.gid, s.port.gid, 16);
  std::memcpy(e.mac, s.port.mac, 6);
  return e;
}

// RESET -> INIT (receives may be posted from here on).
void ToInit(rocemu_qp* qp) {
  rocemu_qp_attr a{};
  a.qp_state = ROCEMU_QPS_INIT;
  a.port_num = 1;
  a.qp_access_flags = kAllAccess;
  if (int e = rocemu_modify_qp(qp, &a,
                               ROCEMU_QP_STATE | ROCEMU_QP_PKEY_INDEX |
                                   ROCEMU_QP_PORT | ROCEMU_QP_ACCESS_FLAGS);
      e != 0) {
    Die("modify_qp INIT", e);
  }
}

// INIT -> RTR -> RTS towards `remote`.
void ToRts(rocemu_qp* qp, const Endpoint& local, const Endpoint& remote) {
  rocemu_qp_attr a{};
  a.qp_state = ROCEMU_QPS_RTR;
  a.path_mtu = absl::GetFlag(FLAGS_mtu);
  a.dest_qp_num = remote.qpn;
  a.rq_psn = remote.psn;
  a.max_dest_rd_atomic = 4;
  a.min_rnr_timer = 1;
  std::memcpy(a.ah_attr.dgid, remote.gid, 16);
  if (!absl::GetFlag(FLAGS_zero_dmac)) {
    std::memcpy(a.ah_attr.dmac, remote.mac, 6);
  }
  a.ah_attr.port_num = 1;
  a.ah_attr.hop_limit = 64;
  if (int e = rocemu_modify_qp(
          qp, &a,
          ROCEMU_QP_STATE | ROCEMU_QP_AV | ROCEMU_QP_PATH_MTU |
              ROCEMU_QP_DEST_QPN | ROCEMU_QP_RQ_PSN |
              ROCEMU_QP_MAX_DEST_RD_ATOMIC | ROCEMU_QP_MIN_RNR_TIMER);
      e != 0) {
    Die("modify_qp RTR", e);
  }
  a.qp_state = ROCEMU_QPS_RTS;
  a.sq_psn = local.psn;
  a.timeout = static_cast<uint8_t>(absl::GetFlag(FLAGS_timeout));
  a.retry_cnt = static_cast<uint8_t>(absl::GetFlag(FLAGS_retry_cnt));
  a.rnr_retry = 7;
  a.max_rd_atomic = 4;
  if (int e = rocemu_modify_qp(qp, &a,
                               ROCEMU_QP_STATE | ROCEMU_QP_SQ_PSN |
                                   ROCEMU_QP_TIMEOUT | ROCEMU_QP_RETRY_CNT |
                                   ROCEMU_QP_RNR_RETRY |
                                   ROCEMU_QP_MAX_QP_RD_ATOMIC);
      e != 0) {
    Die("modify_qp RTS", e);
  }
}

void Connect(rocemu_qp* qp, const Endpoint& local, const Endpoint& remote) {
  ToInit(qp);
  ToRts(qp, local, remote);
}

std::string WcJson(const rocemu_wc& wc) {
  return absl::StrFormat(
      R"({"wr_id":%d,"status":%d,"status_str":"%s","opcode":%d,"byte_len":%d,"qp_num":%d,"vendor_err":%d})",
      wc.wr_id, wc.status, rocemu_wc_status_str(wc.status), wc.opcode,
      wc.byte_len, wc.qp_num, wc.vendor_err);
}

// Busy-polls one completion off `cq` (false: none before the deadline).
bool PollOne(rocemu_cq* cq, rocemu_wc* wc, double deadline) {
  while (Now() < deadline) {
    const int n = rocemu_poll_cq(cq, 1, wc);
    if (n < 0) Die("poll_cq: ring corrupted", EPROTO);
    if (n == 1) return true;
    usleep(100);
  }
  return false;
}

int PostOne(rocemu_qp* qp, int opcode, uint64_t wr_id, uint64_t laddr,
            uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey) {
  rocemu_sge sge{laddr, len, lkey};
  rocemu_send_wr wr{};
  wr.wr_id = wr_id;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.opcode = opcode;
  wr.send_flags = ROCEMU_SEND_SIGNALED;
  wr.wr.rdma.remote_addr = raddr;
  wr.wr.rdma.rkey = rkey;
  rocemu_send_wr* bad = nullptr;
  return rocemu_post_send(qp, &wr, &bad);
}

int PostRecv(rocemu_qp* qp, uint64_t wr_id, uint64_t addr, uint32_t len,
             uint32_t lkey) {
  rocemu_sge sge{addr, len, lkey};
  rocemu_recv_wr wr{wr_id, nullptr, &sge, 1};
  rocemu_recv_wr* bad = nullptr;
  return rocemu_post_recv(qp, &wr, &bad);
}

// ---------------------------------------------------------------- open ----

int CmdOpen() {
  const std::string socket = absl::GetFlag(FLAGS_socket);
  rocemu_context* ctx = rocemu_open_device(socket.c_str());
  if (ctx == nullptr) {
    const int e = errno;
    Emit(absl::StrFormat(
        R"({"event":"open","ok":false,"uid":%d,"errno":%d,"error":"%s"})",
        getuid(), e, std::strerror(e)));
    return kRefused;
  }
  Emit(absl::StrFormat(R"({"event":"open","ok":true,"uid":%d,"client_id":%d})",
                       getuid(), rocemu_client_id(ctx)));
  rocemu_close_device(ctx);
  return kOk;
}

// -------------------------------------------------------------- stream ----

// Both sides send a window of SENDs and keep `2 * window + 1` receives
// posted, reposting each as it completes; every message carries its
// sequence number and the sender's pattern, and must arrive in order and
// byte-exact. On <dir>/stop each side sends an END message carrying its
// total and finishes once its own sends completed and the peer's END came.
int CmdStream() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const std::string name = absl::GetFlag(FLAGS_name);
  const std::string peer = absl::GetFlag(FLAGS_peer);
  const uint32_t seed = absl::GetFlag(FLAGS_seed);
  const size_t size = absl::GetFlag(FLAGS_size);
  const uint32_t window = absl::GetFlag(FLAGS_window);
  const uint32_t nrecv = 2 * window + 1;
  const bool expect_error = absl::GetFlag(FLAGS_expect_error);
  const double deadline = Now() + absl::GetFlag(FLAGS_seconds);
  if (dir.empty() || name.empty() || peer.empty() || size < kHeader ||
      window == 0) {
    Die("stream needs --dir, --name, --peer, --size >= 16, --window > 0",
        EINVAL);
  }

  // Receive slots first, then send slots.
  Side s = OpenSide(absl::GetFlag(FLAGS_socket), (nrecv + window) * size,
                    static_cast<int>(2 * (nrecv + window)));
  rocemu_qp* qp = CreateRcQp(s, window + 1, nrecv);
  const Endpoint local = EndpointOf(s, qp);
  ToInit(qp);
  for (uint32_t i = 0; i < nrecv; ++i) {
    if (int e = PostRecv(qp, i, s.addr(i * size), size, s.mr->lkey); e != 0) {
      Die("post_recv", e);
    }
  }
  Info info;
  PutEndpoint(local, "", &info);
  info["seed"] = absl::StrCat(seed);
  WriteInfo(dir + "/" + name + ".info", info);
  Emit(absl::StrFormat(
      R"({"event":"ready","name":"%s","pid":%d,"client_id":%d,"qpn":%d,"lkey":%d})",
      name, getpid(), rocemu_client_id(s.ctx), local.qpn, s.mr->lkey));

  const Info pinfo = WaitInfo(dir + "/" + peer + ".info", deadline);
  const Endpoint remote = GetEndpoint(pinfo, "");
  const uint32_t peer_seed = static_cast<uint32_t>(U64(pinfo, "seed"));
  ToRts(qp, local, remote);
  WriteInfo(dir + "/" + name + ".rts", {{"qpn", absl::StrCat(local.qpn)}});
  WaitFile(dir + "/" + peer + ".rts", deadline);
  Emit(absl::StrFormat(R"({"event":"connected","name":"%s","peer_qpn":%d})",
                       name, remote.qpn));

  uint64_t posted = 0, sent = 0, received = 0;
  uint32_t in_flight = 0;
  bool stopping = false, end_posted = false, end_done = false;
  bool peer_ended = false;
  uint64_t peer_total = 0;
  double next_report = Now(), next_stop_check = Now();
  const std::string stop_path = dir + "/stop";
  auto report = [&](const char* event) {
    Emit(absl::StrFormat(
        R"({"event":"%s","name":"%s","t":%.6f,"sent":%d,"recv":%d,"in_flight":%d})",
        event, name, Now(), sent, received, in_flight));
  };

  rocemu_wc wcs[16];
  for (;;) {
    const double now = Now();
    if (now > deadline) {
      report("timeout");
      return kCheckFailed;
    }
    if (now >= next_report) {
      report("progress");
      next_report = now + 0.02;
    }
    if (!stopping && now >= next_stop_check) {
      stopping = Exists(stop_path);
      next_stop_check = now + 0.02;
    }
    // Keep the window full; the slot of a send is free once it completed
    // (completions of one QP arrive in order).
    while (!end_posted && in_flight < window) {
      const uint32_t slot = static_cast<uint32_t>(posted % window);
      uint8_t* p = s.base() + (nrecv + slot) * size;
      const uint32_t flags = stopping ? kFlagEnd : 0;
      // An END carries the number of data messages before it.
      const uint64_t seq = posted;
      if (!stopping) FillPattern(p + kHeader, size - kHeader, seed, seq);
      std::memcpy(p, &kMsgMagic, 4);
      std::memcpy(p + 4, &flags, 4);
      std::memcpy(p + 8, &seq, 8);
      const int e = PostOne(qp, ROCEMU_WR_SEND, posted, s.addr(p - s.base()),
                            static_cast<uint32_t>(stopping ? kHeader : size),
                            s.mr->lkey, 0, 0);
      if (e != 0) Die("post_send", e);
      ++posted;
      ++in_flight;
      if (stopping) end_posted = true;
    }
    const int n = rocemu_poll_cq(s.cq, 16, wcs);
    if (n < 0) Die("poll_cq: ring corrupted", EPROTO);
    for (int i = 0; i < n; ++i) {
      const rocemu_wc& wc = wcs[i];
      if (wc.status != ROCEMU_WC_SUCCESS) {
        Emit(absl::StrFormat(
            R"({"event":"error_wc","name":"%s","t":%.6f,"sent":%d,"recv":%d,"wc":%s})",
            name, Now(), sent, received, WcJson(wc)));
        if (!expect_error) return kCheckFailed;
        // The rest of the QP's work flushes: show what followed.
        const double until = Now() + 0.3;
        rocemu_wc more;
        while (PollOne(s.cq, &more, until)) {
          Emit(absl::StrFormat(R"({"event":"later_wc","name":"%s","wc":%s})",
                               name, WcJson(more)));
        }
        return kOk;
      }
      if (wc.opcode == ROCEMU_WC_SEND) {
        --in_flight;
        if (end_posted && in_flight == 0) {
          end_done = true;
        } else {
          ++sent;
        }
        continue;
      }
      // A receive: in order, byte-exact.
      const uint8_t* p = s.base() + wc.wr_id * size;
      uint32_t magic, flags;
      uint64_t seq;
      std::memcpy(&magic, p, 4);
      std::memcpy(&flags, p + 4, 4);
      std::memcpy(&seq, p + 8, 8);
      const bool end = magic == kMsgMagic && (flags & kFlagEnd) != 0;
      const bool good =
          wc.opcode == ROCEMU_WC_RECV && magic == kMsgMagic && !peer_ended &&
          seq == received &&
          (end ? wc.byte_len == kHeader
               : wc.byte_len == size &&
                     IsPattern(p + kHeader, size - kHeader, peer_seed, seq));
      if (!good) {
        Emit(absl::StrFormat(
            R"({"event":"corrupt","name":"%s","expected_seq":%d,"seq":%d,"flags":%d,"wc":%s})",
            name, received, seq, flags, WcJson(wc)));
        return kCheckFailed;
      }
      if (end) {
        peer_ended = true;
        peer_total = seq;
      } else {
        ++received;
      }
      if (int e =
              PostRecv(qp, wc.wr_id, s.addr(wc.wr_id * size), size, s.mr->lkey);
          e != 0) {
        Die("post_recv", e);
      }
    }
    if (end_done && peer_ended) break;
    if (n == 0) usleep(100);
  }
  report("done");
  if (peer_total != received) {
    Emit(absl::StrFormat(
        R"({"event":"count_mismatch","name":"%s","peer_sent":%d,"recv":%d})",
        name, peer_total, received));
    return kCheckFailed;
  }
  if (expect_error) {
    Emit(R"({"event":"no_error_wc"})");
    return kCheckFailed;
  }
  return kOk;
}

// -------------------------------------------------------------- victim ----

constexpr size_t kVictimLen = 64 * 1024;

// U1: an MR on daemon 1 full of its pattern, QP v1 there and QP v2 on
// daemon 2 connected to each other; afterwards READs its MR back over that
// pair, which needs its MR, its QP and its memory all to be intact.
int CmdVictim() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const std::string name = absl::GetFlag(FLAGS_name);
  const uint32_t seed = absl::GetFlag(FLAGS_seed);
  const double deadline = Now() + absl::GetFlag(FLAGS_seconds);
  Side d1 = OpenSide(absl::GetFlag(FLAGS_socket), kVictimLen, 16);
  Side d2 = OpenSide(absl::GetFlag(FLAGS_socket2), kVictimLen, 16);
  FillPattern(d1.base(), kVictimLen, seed, 0);
  rocemu_qp* q1 = CreateRcQp(d1, 4, 4);
  rocemu_qp* q2 = CreateRcQp(d2, 4, 4);
  const Endpoint e1 = EndpointOf(d1, q1), e2 = EndpointOf(d2, q2);
  Connect(q1, e1, e2);
  Connect(q2, e2, e1);
  Info info;
  PutEndpoint(e1, "", &info);
  info["lkey"] = absl::StrCat(d1.mr->lkey);
  info["rkey"] = absl::StrCat(d1.mr->rkey);
  info["addr"] = absl::StrCat(d1.addr(0));
  info["len"] = absl::StrCat(kVictimLen);
  WriteInfo(dir + "/" + name + ".info", info);
  Emit(absl::StrFormat(
      R"({"event":"ready","name":"%s","client_id":%d,"client_id2":%d,"qpn":%d,"lkey":%d,"rkey":%d})",
      name, rocemu_client_id(d1.ctx), rocemu_client_id(d2.ctx), e1.qpn,
      d1.mr->lkey, d1.mr->rkey));

  WaitFile(dir + "/" + name + ".stop", deadline);
  bool ok = true;
  const bool intact = IsPattern(d1.base(), kVictimLen, seed, 0);
  ok &= intact;
  rocemu_qp_attr qa{};
  const int qerr = rocemu_query_qp(q1, &qa, ROCEMU_QP_STATE);
  ok &= qerr == 0 && qa.qp_state == ROCEMU_QPS_RTS;
  // The whole region read back from daemon 2 through the victim's own
  // R_Key.
  bool read_ok = false;
  rocemu_wc wc{};
  if (PostOne(q2, ROCEMU_WR_RDMA_READ, 77, d2.addr(0), kVictimLen, d2.mr->lkey,
              d1.addr(0), d1.mr->rkey) == 0 &&
      PollOne(d2.cq, &wc, Now() + 10)) {
    read_ok = wc.status == ROCEMU_WC_SUCCESS &&
              IsPattern(d2.base(), kVictimLen, seed, 0);
  }
  ok &= read_ok;
  Emit(absl::StrFormat(
      R"({"event":"victim_final","name":"%s","memory_intact":%s,"query_qp_errno":%d,"qp_state":%d,"read_back_ok":%s,"read_wc":%s})",
      name, intact ? "true" : "false", qerr, qa.qp_state,
      read_ok ? "true" : "false", WcJson(wc)));
  return ok ? kOk : kCheckFailed;
}

// ------------------------------------------------------------ attacker ----

// A raw control connection, as a client that does not use the library
// would hold: lets the attacker name another client's QPN and keys, which
// the library's handles never would.
class RawSession {
 public:
  explicit RawSession(const std::string& path) {
    fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path.c_str());
    if (fd_ < 0 ||
        connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
      Die("raw connect " + path, errno);
    }
    wire::HelloReq hello{};
    hello.min_version = wire::kVersion;
    hello.max_version = wire::kVersion;
    std::snprintf(hello.client_name, sizeof(hello.client_name), "probe-raw");
    if (int e = Call(wire::MsgType::kHello, &hello, sizeof(hello)); e != 0) {
      Die("raw hello", e);
    }
  }
  ~RawSession() { close(fd_); }

  // The errno of the reply (0: accepted), or -1 when no valid reply came.
  int Call(wire::MsgType type, const void* body, size_t len) {
    uint8_t buf[wire::kMaxMessage];
    const uint32_t seq = ++seq_;
    const size_t n = wire::EncodeRequest(type, seq, body, len, buf);
    if (n == 0 || send(fd_, buf, n, MSG_NOSIGNAL) != static_cast<ssize_t>(n)) {
      return -1;
    }
    const ssize_t r = recv(fd_, buf, sizeof(buf), 0);
    if (r <= 0) return -1;
    absl::StatusOr<wire::DecodedReply> d =
        wire::DecodeReply({buf, static_cast<size_t>(r)}, type, seq);
    if (!d.ok()) return -1;
    last_message_ = d->message;
    return d->error;
  }
  const std::string& last_message() const { return last_message_; }

 private:
  int fd_ = -1;
  uint32_t seq_ = 0;
  std::string last_message_;
};

struct Checks {
  bool all_ok = true;
  void Report(const std::string& check, bool ok, const std::string& saw) {
    all_ok &= ok;
    Emit(absl::StrFormat(R"({"event":"check","check":"%s","ok":%s,"saw":%s})",
                         check, ok ? "true" : "false", saw));
  }
};

// One RC QP of the attacker on each daemon, connected to each other.
struct Pair {
  rocemu_qp* a;  // on daemon 1
  rocemu_qp* b;  // on daemon 2
};

Pair MakePair(const Side& d1, const Side& d2) {
  Pair p{CreateRcQp(d1, 4, 4), CreateRcQp(d2, 4, 4)};
  const Endpoint ea = EndpointOf(d1, p.a), eb = EndpointOf(d2, p.b);
  Connect(p.a, ea, eb);
  Connect(p.b, eb, ea);
  return p;
}

// Posts one WR and waits for its completion; "status" is -1 if the post
// failed or nothing came.
rocemu_wc Run(const Side& side, rocemu_qp* qp, int opcode, uint64_t laddr,
              uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey) {
  static uint64_t wr_id = 1000;
  rocemu_wc wc{};
  wc.status = -1;
  if (PostOne(qp, opcode, ++wr_id, laddr, len, lkey, raddr, rkey) != 0 ||
      !PollOne(side.cq, &wc, Now() + 10)) {
    wc.status = -1;
  }
  return wc;
}

int CmdAttacker() {
  const std::string dir = absl::GetFlag(FLAGS_dir);
  const double deadline = Now() + absl::GetFlag(FLAGS_seconds);
  const uint32_t seed = absl::GetFlag(FLAGS_seed);
  const Info v =
      WaitInfo(dir + "/" + absl::GetFlag(FLAGS_peer) + ".info", deadline);
  const uint32_t v_qpn = static_cast<uint32_t>(U64(v, "qpn"));
  const uint32_t v_lkey = static_cast<uint32_t>(U64(v, "lkey"));
  const uint32_t v_rkey = static_cast<uint32_t>(U64(v, "rkey"));
  const uint64_t v_addr = U64(v, "addr");
  constexpr uint32_t kLen = 256;
  constexpr size_t kBufLen = 64 * 1024;
  // Offsets in the attacker's buffers.
  constexpr size_t kCtl = 0, kLanding = 16384, kRecv = 32768;

  Side d1 = OpenSide(absl::GetFlag(FLAGS_socket), kBufLen, 16);
  Side d2 = OpenSide(absl::GetFlag(FLAGS_socket2), kBufLen, 16);
  FillPattern(d1.base(), kBufLen, seed, 1);
  FillPattern(d2.base(), kBufLen, seed, 2);
  Emit(absl::StrFormat(
      R"({"event":"ready","uid":%d,"client_id":%d,"client_id2":%d,"victim_qpn":%d,"victim_lkey":%d,"victim_rkey":%d})",
      getuid(), rocemu_client_id(d1.ctx), rocemu_client_id(d2.ctx), v_qpn,
      v_lkey, v_rkey));
  Checks checks;
  auto saw = [](const rocemu_wc& wc) { return WcJson(wc); };

  // 1. RDMA READ landing in the victim's memory through its L_Key; the
  //    same READ into the attacker's own memory first.
  {
    Pair p = MakePair(d1, d2);
    rocemu_wc c = Run(d1, p.a, ROCEMU_WR_RDMA_READ, d1.addr(kLanding), kLen,
                      d1.mr->lkey, d2.addr(kCtl), d2.mr->rkey);
    checks.Report("control_read_own_lkey",
                  c.status == ROCEMU_WC_SUCCESS &&
                      IsPattern(d1.base() + kLanding, kLen, seed, 2),
                  saw(c));
    c = Run(d1, p.a, ROCEMU_WR_RDMA_READ, v_addr, kLen, v_lkey, d2.addr(kCtl),
            d2.mr->rkey);
    checks.Report("read_into_victim_lkey_loc_prot_err",
                  c.status == ROCEMU_WC_LOC_PROT_ERR, saw(c));
  }
  // 2. RDMA WRITE gathering from the victim's memory through its L_Key
  //    (exfiltration): refused, and nothing lands at the target.
  {
    Pair p = MakePair(d1, d2);
    rocemu_wc c = Run(d1, p.a, ROCEMU_WR_RDMA_WRITE, d1.addr(kCtl), kLen,
                      d1.mr->lkey, d2.addr(kLanding), d2.mr->rkey);
    checks.Report("control_write_own_lkey",
                  c.status == ROCEMU_WC_SUCCESS &&
                      IsPattern(d2.base() + kLanding, kLen, seed, 1),
                  saw(c));
    const std::vector<uint8_t> target(d2.base() + kLanding + kLen,
                                      d2.base() + kLanding + 2 * kLen);
    c = Run(d1, p.a, ROCEMU_WR_RDMA_WRITE, v_addr, kLen, v_lkey,
            d2.addr(kLanding + kLen), d2.mr->rkey);
    checks.Report(
        "write_from_victim_lkey_loc_prot_err",
        c.status == ROCEMU_WC_LOC_PROT_ERR &&
            std::memcmp(target.data(), d2.base() + kLanding + kLen, kLen) == 0,
        saw(c));
  }
  // 3. A receive WQE pointing into the victim's memory: the incoming SEND
  //    must not be scattered there.
  {
    Pair p = MakePair(d1, d2);
    rocemu_wc c{};
    c.status = -1;
    if (PostRecv(p.a, 1, d1.addr(kRecv), kLen, d1.mr->lkey) == 0 &&
        PostRecv(p.a, 2, v_addr, kLen, v_lkey) == 0) {
      rocemu_wc s =
          Run(d2, p.b, ROCEMU_WR_SEND, d2.addr(kCtl), kLen, d2.mr->lkey, 0, 0);
      if (PollOne(d1.cq, &c, Now() + 10)) {
        checks.Report("control_send_into_own_recv",
                      s.status == ROCEMU_WC_SUCCESS && c.wr_id == 1 &&
                          c.status == ROCEMU_WC_SUCCESS &&
                          IsPattern(d1.base() + kRecv, kLen, seed, 2),
                      saw(c));
      } else {
        checks.Report("control_send_into_own_recv", false, saw(s));
      }
      // The second SEND meets the receive that names the victim's key.
      s = Run(d2, p.b, ROCEMU_WR_SEND, d2.addr(kCtl), kLen, d2.mr->lkey, 0, 0);
      c = rocemu_wc{};
      c.status = -1;
      PollOne(d1.cq, &c, Now() + 10);
      checks.Report(
          "send_into_victim_lkey_recv_loc_prot_err",
          c.wr_id == 2 && c.status == ROCEMU_WC_LOC_PROT_ERR,
          absl::StrFormat(R"({"recv":%s,"send":%s})", saw(c), saw(s)));
    } else {
      checks.Report("post_recv", false, "null");
    }
  }
  // 4. RDMA WRITE from daemon 2 into the victim's memory with its R_Key:
  //    the key is in the victim's PD, not in that of the attacker's QP.
  {
    Pair p = MakePair(d1, d2);
    rocemu_wc c = Run(d2, p.b, ROCEMU_WR_RDMA_WRITE, d2.addr(kCtl), kLen,
                      d2.mr->lkey, d1.addr(kLanding), d1.mr->rkey);
    checks.Report("control_remote_write_own_rkey",
                  c.status == ROCEMU_WC_SUCCESS &&
                      IsPattern(d1.base() + kLanding, kLen, seed, 2),
                  saw(c));
    c = Run(d2, p.b, ROCEMU_WR_RDMA_WRITE, d2.addr(kCtl), kLen, d2.mr->lkey,
            v_addr, v_rkey);
    checks.Report("remote_write_victim_rkey_rem_access_err",
                  c.status == ROCEMU_WC_REM_ACCESS_ERR, saw(c));
  }
  // 5. RDMA READ of the victim's memory with its R_Key (exfiltration).
  {
    Pair p = MakePair(d1, d2);
    const size_t land = kLanding + 2 * kLen;
    rocemu_wc c = Run(d2, p.b, ROCEMU_WR_RDMA_READ, d2.addr(land), kLen,
                      d2.mr->lkey, d1.addr(kCtl), d1.mr->rkey);
    checks.Report("control_remote_read_own_rkey",
                  c.status == ROCEMU_WC_SUCCESS &&
                      IsPattern(d2.base() + land, kLen, seed, 1),
                  saw(c));
    FillPattern(d2.base() + land, kLen, seed, 2);
    c = Run(d2, p.b, ROCEMU_WR_RDMA_READ, d2.addr(land), kLen, d2.mr->lkey,
            v_addr, v_rkey);
    checks.Report("remote_read_victim_rkey_rem_access_err",
                  c.status == ROCEMU_WC_REM_ACCESS_ERR &&
                      IsPattern(d2.base() + land, kLen, seed, 2),
                  saw(c));
  }
  // 6. The control plane: the victim's QPN and MR keys are not the
  //    attacker's to name.
  {
    RawSession raw(absl::GetFlag(FLAGS_socket));
    auto report = [&](const char* check, int err) {
      checks.Report(check, err == ENOENT,
                    absl::StrFormat(R"({"errno":%d,"error":"%s","reply":"%s"})",
                                    err, err > 0 ? std::strerror(err) : "",
                                    raw.last_message()));
    };
    wire::HandleReq h{v_qpn, 0};
    report("query_victim_qp_enoent",
           raw.Call(wire::MsgType::kQueryQp, &h, sizeof(h)));
    wire::ModifyQpReq m{};
    m.qpn = v_qpn;
    m.attr_mask = ROCEMU_QP_STATE;
    m.attr.qp_state = ROCEMU_QPS_ERR;
    report("modify_victim_qp_enoent",
           raw.Call(wire::MsgType::kModifyQp, &m, sizeof(m)));
    report("destroy_victim_qp_enoent",
           raw.Call(wire::MsgType::kDestroyQp, &h, sizeof(h)));
    h.handle = v_lkey;
    report("dereg_victim_lkey_enoent",
           raw.Call(wire::MsgType::kDeregMr, &h, sizeof(h)));
    h.handle = v_rkey;
    report("dereg_victim_rkey_enoent",
           raw.Call(wire::MsgType::kDeregMr, &h, sizeof(h)));
  }
  Emit(absl::StrFormat(R"({"event":"attacker_done","all_ok":%s})",
                       checks.all_ok ? "true" : "false"));
  return checks.all_ok ? kOk : kCheckFailed;
}

int Main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "verbs_probe open|stream|victim|attacker [flags]: a verbs client for "
      "the net tests (see the file comment)");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: verbs_probe open|stream|victim|attacker\n");
    return kSetupFailed;
  }
  const std::string cmd = args[1];
  if (cmd == "open") return CmdOpen();
  if (cmd == "stream") return CmdStream();
  if (cmd == "victim") return CmdVictim();
  if (cmd == "attacker") return CmdAttacker();
  std::fprintf(stderr, "unknown subcommand %s\n", cmd.c_str());
  return kSetupFailed;
}

}  // namespace
}  // namespace rocemu::verbs

int main(int argc, char** argv) { return rocemu::verbs::Main(argc, argv); }
