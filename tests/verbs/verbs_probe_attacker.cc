// verbs_probe attacker (U2): uses the victim's L_Key, R_Key, QPN and MR
// keys in every way a client can, each next to a positive control.
#include <errno.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/verbs/verbs_probe.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs::probe {
namespace {

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

}  // namespace

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

}  // namespace rocemu::verbs::probe
