#include <errno.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "tests/verbs/verbs_probe.h"
#include "verbs/rocemu_verbs.h"

namespace rocemu::verbs::probe {

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

}  // namespace rocemu::verbs::probe
