#include "emulator/control/test_hooks.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "emulator/control/control_server.h"
#include "nic/gid_table.h"
#include "verbs/server/json_writer.h"

namespace rocemu::emulator {
namespace {

constexpr std::string_view kCommands[] = {
    "reg_mr",    "dereg_mr", "create_cq",  "create_qp", "modify_qp",
    "connect",   "query_qp", "destroy_qp", "create_ah", "post_send",
    "post_recv", "poll_cq",  "mr_read",    "mr_digest",
};
constexpr uint64_t kMaxReadBytes = 4096;
constexpr uint32_t kMaxPollBatch = 4096;
constexpr uint32_t kMaxPostCount = 65536;

// Debian's Abseil has its own string_view; StrCat does not take std's.
absl::string_view A(std::string_view s) { return {s.data(), s.size()}; }

uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A numeric field with a default; InvalidArgument when present but bad or
// above `max`.
absl::StatusOr<uint64_t> Num(const ControlRequest& req, std::string_view key,
                             uint64_t dflt, uint64_t max = ~uint64_t{0}) {
  uint64_t v = dflt;
  if (req.Has(key) && !req.Uint(key, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", A(key), "\" must be an unsigned integer"));
  }
  if (v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", A(key), "\" must be at most ", max));
  }
  return v;
}
absl::StatusOr<uint64_t> Required(const ControlRequest& req,
                                  std::string_view key,
                                  uint64_t max = ~uint64_t{0}) {
  uint64_t v = 0;
  if (!req.Uint(key, &v)) {
    return absl::InvalidArgumentError(
        absl::StrCat("needs \"", A(key), "\": an unsigned integer"));
  }
  if (v > max) {
    return absl::InvalidArgumentError(
        absl::StrCat("\"", A(key), "\" must be at most ", max));
  }
  return v;
}

#define HOOK_ASSIGN(lhs, expr)                  \
  auto lhs##_or = (expr);                       \
  if (!lhs##_or.ok()) return lhs##_or.status(); \
  auto lhs = *lhs##_or

absl::StatusOr<nic::QpState> ParseState(std::string_view s) {
  static constexpr std::pair<std::string_view, nic::QpState> kStates[] = {
      {"RESET", nic::QpState::kReset}, {"INIT", nic::QpState::kInit},
      {"RTR", nic::QpState::kRtr},     {"RTS", nic::QpState::kRts},
      {"SQD", nic::QpState::kSqd},     {"SQE", nic::QpState::kSqe},
      {"ERR", nic::QpState::kErr}};
  for (const auto& [name, st] : kStates) {
    if (s == name) return st;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown QP state '", A(s), "' (RESET INIT RTR RTS SQD SQE ERR)"));
}

absl::StatusOr<nic::WrOpcode> ParseOpcode(std::string_view s) {
  static constexpr std::pair<std::string_view, nic::WrOpcode> kOps[] = {
      {"WRITE", nic::WrOpcode::kRdmaWrite},
      {"WRITE_IMM", nic::WrOpcode::kRdmaWriteWithImm},
      {"SEND", nic::WrOpcode::kSend},
      {"SEND_IMM", nic::WrOpcode::kSendWithImm},
      {"READ", nic::WrOpcode::kRdmaRead},
      {"CMP_SWAP", nic::WrOpcode::kAtomicCmpAndSwp},
      {"FETCH_ADD", nic::WrOpcode::kAtomicFetchAndAdd}};
  for (const auto& [name, op] : kOps) {
    if (s == name) return op;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown opcode '", A(s),
      "' (WRITE WRITE_IMM SEND SEND_IMM READ CMP_SWAP FETCH_ADD)"));
}

absl::StatusOr<nic::PathMtu> ParseMtu(uint64_t bytes) {
  std::optional<nic::Mtu> m = nic::MtuFromBytes(static_cast<uint32_t>(bytes));
  if (!m.has_value() || bytes > 4096) {
    return absl::InvalidArgumentError(
        "\"mtu\" must be 256..4096 (a power of 2)");
  }
  return static_cast<nic::PathMtu>(*m);
}

absl::StatusOr<nic::Gid> ParseIp(const ControlRequest& req,
                                 std::string_view key) {
  std::string text = req.String(key);
  std::optional<nic::Gid> g = nic::ParseGid(text);
  if (!g.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("needs \"", A(key), "\": an IPv4 or IPv6 address"));
  }
  return *g;
}

// The next hop's MAC, or Unavailable (the caller retries) while the
// neighbour cache does not know it yet.
absl::StatusOr<MacAddr> ResolveMac(RnicPort& port, const nic::Gid& ip) {
  std::optional<MacAddr> mac = port.Resolve(ip);
  if (!mac.has_value()) {
    return absl::UnavailableError(
        absl::StrCat("neighbour ", nic::GidToString(ip), " not resolved yet"));
  }
  return *mac;
}

}  // namespace

uint8_t PatternByte(uint64_t seed, uint64_t index) {
  return static_cast<uint8_t>(SplitMix64(seed + index / 8) >>
                              (8 * (index % 8)));
}

void FillPattern(uint64_t seed, uint8_t* data, uint64_t len) {
  for (uint64_t w = 0; w * 8 < len; ++w) {
    uint64_t v = SplitMix64(seed + w);
    for (uint64_t b = 0; b < 8 && w * 8 + b < len; ++b) {
      data[w * 8 + b] = static_cast<uint8_t>(v >> (8 * b));
    }
  }
}

TestHooks::TestHooks(std::vector<RnicPort*> ports,
                     std::vector<std::string> names)
    : names_(std::move(names)) {
  for (RnicPort* p : ports) {
    PortState s;
    s.port = p;
    ports_.push_back(std::move(s));
  }
}

bool TestHooks::Handles(std::string_view cmd) {
  return std::find(std::begin(kCommands), std::end(kCommands), cmd) !=
         std::end(kCommands);
}

std::string TestHooks::Handle(std::string_view cmd,
                              const ControlRequest& request) {
  absl::StatusOr<Reply> r = Dispatch(cmd, request);
  if (r.ok()) return verbs::DumpJson(*r);
  Reply error = {{"error", absl::StrCat(A(cmd), ": ", r.status().message())}};
  if (absl::IsUnavailable(r.status())) error["retry"] = true;
  return verbs::DumpJson(error);
}

absl::StatusOr<TestHooks::PortState*> TestHooks::Port(
    const ControlRequest& request) {
  std::string name = request.String("port");
  for (size_t i = 0; i < ports_.size(); ++i) {
    if (name.empty() || names_[i] == name) {
      PortState& p = ports_[i];
      if (p.pd == nic::kInvalidHandle) {
        absl::StatusOr<nic::PdHandle> pd = p.port->rnic().AllocPd();
        if (!pd.ok()) return pd.status();
        p.pd = *pd;
      }
      return &p;
    }
  }
  return absl::NotFoundError(absl::StrCat("no port '", name, "'"));
}

absl::StatusOr<TestHooks::Reply> TestHooks::Dispatch(
    std::string_view cmd, const ControlRequest& req) {
  HOOK_ASSIGN(p, Port(req));
  if (cmd == "reg_mr") return RegMr(*p, req);
  if (cmd == "dereg_mr") return DeregMr(*p, req);
  if (cmd == "create_cq") return CreateCq(*p, req);
  if (cmd == "create_qp") return CreateQp(*p, req);
  if (cmd == "modify_qp") return ModifyQp(*p, req);
  if (cmd == "connect") return Connect(*p, req);
  if (cmd == "query_qp") return QueryQp(*p, req);
  if (cmd == "destroy_qp") return DestroyQp(*p, req);
  if (cmd == "create_ah") return CreateAh(*p, req);
  if (cmd == "post_send") return PostSend(*p, req);
  if (cmd == "post_recv") return PostRecv(*p, req);
  if (cmd == "poll_cq") return PollCq(*p, req);
  if (cmd == "mr_read") return MrRead(*p, req, false);
  if (cmd == "mr_digest") return MrRead(*p, req, true);
  return absl::InvalidArgumentError("not a test hook");
}

absl::StatusOr<TestHooks::Reply> TestHooks::RegMr(PortState& p,
                                                  const ControlRequest& req) {
  HOOK_ASSIGN(len, Required(req, "len", kMaxBufferBytes));
  HOOK_ASSIGN(seed, Num(req, "seed", 0));
  HOOK_ASSIGN(acc,
              Num(req, "access",
                  nic::access::kLocalWrite | nic::access::kRemoteWrite |
                      nic::access::kRemoteRead | nic::access::kRemoteAtomic,
                  0xFFFFFFFF));
  if (len == 0) return absl::InvalidArgumentError("\"len\" must be > 0");
  if (buffer_bytes_ + len > kMaxBufferBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "test buffers are limited to ", kMaxBufferBytes, " bytes in all"));
  }
  Buffer b;
  b.words.reset(new uint64_t[(len + 7) / 8]);
  b.len = len;
  FillPattern(seed, b.data(), len);
  absl::StatusOr<uint32_t> key = p.port->rnic().RegMr(
      p.pd, b.data(), len, static_cast<nic::AccessFlags>(acc));
  if (!key.ok()) return key.status();
  const uint64_t addr = reinterpret_cast<uint64_t>(b.data());
  buffer_bytes_ += len;
  p.buffers[*key] = std::move(b);
  return Reply{{"ok", true}, {"key", *key}, {"addr", addr}, {"len", len}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::DeregMr(PortState& p,
                                                    const ControlRequest& req) {
  HOOK_ASSIGN(key, Required(req, "key", 0xFFFFFFFF));
  auto it = p.buffers.find(static_cast<uint32_t>(key));
  if (it == p.buffers.end()) return absl::NotFoundError("no such MR");
  if (absl::Status s = p.port->rnic().DeregMr(it->first); !s.ok()) return s;
  buffer_bytes_ -= it->second.len;
  p.buffers.erase(it);
  return Reply{{"ok", true}};
}

// The hooks act only on what they created: an application's QPs and CQs
// on the same RNIC are out of their reach.
absl::StatusOr<uint64_t> TestHooks::OwnQp(const PortState& p,
                                          const ControlRequest& req) {
  HOOK_ASSIGN(qpn, Required(req, "qpn", 0xFFFFFF));
  if (!p.qps.contains(static_cast<uint32_t>(qpn))) {
    return absl::PermissionDeniedError(
        absl::StrCat("QP ", qpn, " was not created by the test hooks"));
  }
  return qpn;
}

absl::StatusOr<uint64_t> TestHooks::OwnCq(const PortState& p,
                                          const ControlRequest& req,
                                          std::string_view key,
                                          std::optional<uint64_t> fallback) {
  HOOK_ASSIGN(cq, fallback.has_value() ? Num(req, key, *fallback, 0xFFFFFFFF)
                                       : Required(req, key, 0xFFFFFFFF));
  if (!p.cqs.contains(static_cast<uint32_t>(cq))) {
    return absl::PermissionDeniedError(
        absl::StrCat("CQ ", cq, " was not created by the test hooks"));
  }
  return cq;
}

absl::StatusOr<TestHooks::Reply> TestHooks::CreateCq(
    PortState& p, const ControlRequest& req) {
  HOOK_ASSIGN(cqe, Num(req, "cqe", 4096, 1u << 22));
  absl::StatusOr<nic::CqHandle> cq =
      p.port->rnic().CreateCq(static_cast<uint32_t>(cqe));
  if (!cq.ok()) return cq.status();
  p.cqs.insert(*cq);
  return Reply{{"ok", true}, {"cq", *cq}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::CreateQp(
    PortState& p, const ControlRequest& req) {
  nic::QpInitAttr init;
  std::string type = req.String("type");
  if (type == "RC" || type.empty()) {
    init.qp_type = nic::QpType::kRc;
  } else if (type == "UC") {
    init.qp_type = nic::QpType::kUc;
  } else if (type == "UD") {
    init.qp_type = nic::QpType::kUd;
  } else {
    return absl::InvalidArgumentError("\"type\" must be RC, UC or UD");
  }
  HOOK_ASSIGN(cq, OwnCq(p, req, "cq", std::nullopt));
  HOOK_ASSIGN(send_cq, OwnCq(p, req, "send_cq", cq));
  HOOK_ASSIGN(recv_cq, OwnCq(p, req, "recv_cq", cq));
  HOOK_ASSIGN(sw, Num(req, "max_send_wr", 256, 1u << 15));
  HOOK_ASSIGN(rw, Num(req, "max_recv_wr", 256, 1u << 15));
  init.send_cq = static_cast<uint32_t>(send_cq);
  init.recv_cq = static_cast<uint32_t>(recv_cq);
  init.cap = {static_cast<uint32_t>(sw), static_cast<uint32_t>(rw), 1, 1,
              nic::kMaxInlineData};
  absl::StatusOr<uint32_t> qpn = p.port->rnic().CreateQp(p.pd, init);
  if (!qpn.ok()) return qpn.status();
  p.port->TrackQp(*qpn);
  p.qps.insert(*qpn);
  return Reply{{"ok", true}, {"qpn", *qpn}};
}

// Applies the fields present in `req` (besides "state") to one modify.
absl::StatusOr<TestHooks::Reply> TestHooks::ModifyQp(
    PortState& p, const ControlRequest& req) {
  namespace qa = nic::qp_attr;
  HOOK_ASSIGN(qpn, OwnQp(p, req));
  nic::QpAttr a;
  nic::QpAttrMask m = 0;
  if (std::string st = req.String("state"); !st.empty()) {
    HOOK_ASSIGN(state, ParseState(st));
    a.qp_state = state;
    m |= qa::kState;
  }
  auto field = [&](std::string_view key, nic::QpAttrMask bit, uint64_t max,
                   auto* out) -> absl::Status {
    if (!req.Has(key)) return absl::OkStatus();
    absl::StatusOr<uint64_t> v = Required(req, key, max);
    if (!v.ok()) return v.status();
    *out = static_cast<std::remove_pointer_t<decltype(out)>>(*v);
    m |= bit;
    return absl::OkStatus();
  };
  for (absl::Status s :
       {field("qkey", qa::kQkey, 0xFFFFFFFF, &a.qkey),
        field("pkey_index", qa::kPkeyIndex, 0xFFFF, &a.pkey_index),
        field("access", qa::kAccessFlags, 0xFFFFFFFF, &a.qp_access_flags),
        field("dest_qpn", qa::kDestQpn, 0xFFFFFF, &a.dest_qp_num),
        field("rq_psn", qa::kRqPsn, 0xFFFFFF, &a.rq_psn),
        field("sq_psn", qa::kSqPsn, 0xFFFFFF, &a.sq_psn),
        field("timeout", qa::kTimeout, 31, &a.timeout),
        field("retry_cnt", qa::kRetryCnt, 7, &a.retry_cnt),
        field("rnr_retry", qa::kRnrRetry, 7, &a.rnr_retry),
        field("min_rnr_timer", qa::kMinRnrTimer, 31, &a.min_rnr_timer),
        field("max_rd_atomic", qa::kMaxQpRdAtomic, 255, &a.max_rd_atomic),
        field("max_dest_rd_atomic", qa::kMaxDestRdAtomic, 255,
              &a.max_dest_rd_atomic)}) {
    if (!s.ok()) return s;
  }
  if (req.Has("port_num")) {
    HOOK_ASSIGN(port_num, Required(req, "port_num", 255));
    a.port_num = static_cast<uint8_t>(port_num);
    m |= qa::kPort;
  }
  if (req.Has("mtu")) {
    HOOK_ASSIGN(bytes, Required(req, "mtu"));
    HOOK_ASSIGN(mtu, ParseMtu(bytes));
    a.path_mtu = mtu;
    m |= qa::kPathMtu;
  }
  if (req.Has("remote_ip")) {
    HOOK_ASSIGN(dgid, ParseIp(req, "remote_ip"));
    HOOK_ASSIGN(dmac, ResolveMac(*p.port, dgid));
    HOOK_ASSIGN(sgid_index, Num(req, "sgid_index", 0, 255));
    HOOK_ASSIGN(tclass, Num(req, "traffic_class", 0, 255));
    HOOK_ASSIGN(sl, Num(req, "sl", 0, 7));
    a.ah_attr.dgid = dgid;
    a.ah_attr.dmac = dmac;
    a.ah_attr.sgid_index = static_cast<uint8_t>(sgid_index);
    a.ah_attr.traffic_class = static_cast<uint8_t>(tclass);
    a.ah_attr.sl = static_cast<uint8_t>(sl);
    m |= qa::kAv;
  }
  if (absl::Status s =
          p.port->rnic().ModifyQp(static_cast<uint32_t>(qpn), a, m);
      !s.ok()) {
    return s;
  }
  return QueryQp(p, req);
}

// RESET -> INIT -> RTR -> RTS in one request (the QP's current state is
// the starting point, so a retry after an unresolved neighbour resumes).
absl::StatusOr<TestHooks::Reply> TestHooks::Connect(PortState& p,
                                                    const ControlRequest& req) {
  namespace qa = nic::qp_attr;
  HOOK_ASSIGN(qpn32, OwnQp(p, req));
  const uint32_t qpn = static_cast<uint32_t>(qpn32);
  nic::Rnic& nic = p.port->rnic();
  const nic::Qp* qp = nic.GetQp(qpn);
  if (qp == nullptr) return absl::NotFoundError("no such QP");
  const bool ud = qp->type() == nic::QpType::kUd;
  const bool rc = qp->type() == nic::QpType::kRc;
  HOOK_ASSIGN(acc, Num(req, "access", nic::access::kRemoteAny, 0xFFFFFFFF));
  HOOK_ASSIGN(qkey, Num(req, "qkey", 0x11111111, 0xFFFFFFFF));
  HOOK_ASSIGN(pkey_index, Num(req, "pkey_index", 0, 0xFFFF));
  HOOK_ASSIGN(sq_psn, Num(req, "sq_psn", 0, 0xFFFFFF));
  HOOK_ASSIGN(rq_psn, Num(req, "rq_psn", 0, 0xFFFFFF));
  HOOK_ASSIGN(
      mtu_bytes,
      Num(req, "mtu", nic::MtuToBytes(nic.port_attr().active_mtu), 4096));
  HOOK_ASSIGN(mtu, ParseMtu(mtu_bytes));
  HOOK_ASSIGN(timeout, Num(req, "timeout", 14, 31));
  HOOK_ASSIGN(retry_cnt, Num(req, "retry_cnt", 7, 7));
  HOOK_ASSIGN(rnr_retry, Num(req, "rnr_retry", 7, 7));
  HOOK_ASSIGN(min_rnr_timer, Num(req, "min_rnr_timer", 1, 31));
  HOOK_ASSIGN(rd_atomic, Num(req, "max_rd_atomic", 16, 255));
  HOOK_ASSIGN(tclass, Num(req, "traffic_class", 0, 255));
  nic::QpAttr a;
  a.pkey_index = static_cast<uint16_t>(pkey_index);
  a.port_num = 1;
  a.qp_access_flags = static_cast<nic::AccessFlags>(acc);
  a.qkey = static_cast<uint32_t>(qkey);
  if (!ud) {
    HOOK_ASSIGN(dest_qpn, Required(req, "remote_qpn", 0xFFFFFF));
    HOOK_ASSIGN(dgid, ParseIp(req, "remote_ip"));
    // Resolve before touching the QP, so an unresolved neighbour leaves it
    // where it was.
    HOOK_ASSIGN(dmac, ResolveMac(*p.port, dgid));
    a.dest_qp_num = static_cast<uint32_t>(dest_qpn);
    a.ah_attr.dgid = dgid;
    a.ah_attr.dmac = dmac;
    a.ah_attr.traffic_class = static_cast<uint8_t>(tclass);
  }
  if (qp->state() == nic::QpState::kReset) {
    a.qp_state = nic::QpState::kInit;
    nic::QpAttrMask m = qa::kState | qa::kPkeyIndex | qa::kPort;
    m |= ud ? qa::kQkey : qa::kAccessFlags;
    if (absl::Status s = nic.ModifyQp(qpn, a, m); !s.ok()) return s;
  }
  if (qp->state() == nic::QpState::kInit) {
    a.qp_state = nic::QpState::kRtr;
    a.path_mtu = mtu;
    a.rq_psn = static_cast<uint32_t>(rq_psn);
    a.max_dest_rd_atomic = static_cast<uint8_t>(rd_atomic);
    a.min_rnr_timer = static_cast<uint8_t>(min_rnr_timer);
    nic::QpAttrMask m = qa::kState;
    if (!ud) m |= qa::kAv | qa::kPathMtu | qa::kDestQpn | qa::kRqPsn;
    if (rc) m |= qa::kMaxDestRdAtomic | qa::kMinRnrTimer;
    if (absl::Status s = nic.ModifyQp(qpn, a, m); !s.ok()) return s;
  }
  if (qp->state() == nic::QpState::kRtr) {
    a.qp_state = nic::QpState::kRts;
    a.sq_psn = static_cast<uint32_t>(sq_psn);
    a.timeout = static_cast<uint8_t>(timeout);
    a.retry_cnt = static_cast<uint8_t>(retry_cnt);
    a.rnr_retry = static_cast<uint8_t>(rnr_retry);
    a.max_rd_atomic = static_cast<uint8_t>(rd_atomic);
    nic::QpAttrMask m = qa::kState | qa::kSqPsn;
    if (rc) {
      m |= qa::kTimeout | qa::kRetryCnt | qa::kRnrRetry | qa::kMaxQpRdAtomic;
    }
    if (absl::Status s = nic.ModifyQp(qpn, a, m); !s.ok()) return s;
  }
  return QueryQp(p, req);
}

absl::StatusOr<TestHooks::Reply> TestHooks::QueryQp(PortState& p,
                                                    const ControlRequest& req) {
  HOOK_ASSIGN(qpn, OwnQp(p, req));
  absl::StatusOr<nic::QpAttr> a =
      p.port->rnic().QueryQp(static_cast<uint32_t>(qpn));
  if (!a.ok()) return a.status();
  return Reply{{"ok", true},
               {"qpn", qpn},
               {"state", nic::QpStateName(a->qp_state)},
               {"sq_psn", a->sq_psn},
               {"rq_psn", a->rq_psn},
               {"dest_qpn", a->dest_qp_num},
               {"mtu", nic::PathMtuBytes(a->path_mtu)}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::DestroyQp(
    PortState& p, const ControlRequest& req) {
  HOOK_ASSIGN(qpn, OwnQp(p, req));
  if (absl::Status s = p.port->rnic().DestroyQp(static_cast<uint32_t>(qpn));
      !s.ok()) {
    return s;
  }
  p.port->UntrackQp(static_cast<uint32_t>(qpn));
  p.qps.erase(static_cast<uint32_t>(qpn));
  return Reply{{"ok", true}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::CreateAh(
    PortState& p, const ControlRequest& req) {
  HOOK_ASSIGN(dgid, ParseIp(req, "remote_ip"));
  HOOK_ASSIGN(dmac, ResolveMac(*p.port, dgid));
  HOOK_ASSIGN(sgid_index, Num(req, "sgid_index", 0, 255));
  HOOK_ASSIGN(tclass, Num(req, "traffic_class", 0, 255));
  HOOK_ASSIGN(sl, Num(req, "sl", 0, 7));
  nic::AhAttr attr;
  attr.dgid = dgid;
  attr.sgid_index = static_cast<uint8_t>(sgid_index);
  attr.traffic_class = static_cast<uint8_t>(tclass);
  attr.sl = static_cast<uint8_t>(sl);
  absl::StatusOr<nic::AhHandle> ah = p.port->rnic().CreateAh(p.pd, attr, dmac);
  if (!ah.ok()) return ah.status();
  return Reply{{"ok", true}, {"ah", *ah}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::PostSend(
    PortState& p, const ControlRequest& req) {
  HOOK_ASSIGN(qpn, OwnQp(p, req));
  HOOK_ASSIGN(op, ParseOpcode(req.String("opcode")));
  HOOK_ASSIGN(wr_id, Num(req, "wr_id", 0));
  HOOK_ASSIGN(count, Num(req, "count", 1, kMaxPostCount));
  bool signaled = true;
  req.Bool("signaled", &signaled);
  nic::SendWr wr;
  wr.opcode = op;
  wr.send_flags = signaled ? nic::send_flags::kSignaled : 0;
  HOOK_ASSIGN(len, Num(req, "len", 0, 0xFFFFFFFF));
  if (len > 0 || op == nic::WrOpcode::kAtomicCmpAndSwp ||
      op == nic::WrOpcode::kAtomicFetchAndAdd) {
    HOOK_ASSIGN(laddr, Required(req, "laddr"));
    HOOK_ASSIGN(lkey, Required(req, "lkey", 0xFFFFFFFF));
    wr.sg_list.PushBack(
        {laddr, static_cast<uint32_t>(len), static_cast<uint32_t>(lkey)});
  }
  HOOK_ASSIGN(imm, Num(req, "imm", 0, 0xFFFFFFFF));
  wr.imm_data = static_cast<uint32_t>(imm);
  switch (op) {
    case nic::WrOpcode::kRdmaWrite:
    case nic::WrOpcode::kRdmaWriteWithImm:
    case nic::WrOpcode::kRdmaRead: {
      HOOK_ASSIGN(raddr, Required(req, "raddr"));
      HOOK_ASSIGN(rkey, Required(req, "rkey", 0xFFFFFFFF));
      wr.rdma = {raddr, static_cast<uint32_t>(rkey)};
      break;
    }
    case nic::WrOpcode::kAtomicCmpAndSwp:
    case nic::WrOpcode::kAtomicFetchAndAdd: {
      HOOK_ASSIGN(raddr, Required(req, "raddr"));
      HOOK_ASSIGN(rkey, Required(req, "rkey", 0xFFFFFFFF));
      HOOK_ASSIGN(compare_add, Num(req, "compare_add", 0));
      HOOK_ASSIGN(swap, Num(req, "swap", 0));
      wr.atomic = {raddr, compare_add, swap, static_cast<uint32_t>(rkey)};
      break;
    }
    default:
      break;
  }
  if (req.Has("ah")) {
    HOOK_ASSIGN(ah, Required(req, "ah", 0xFFFFFFFF));
    HOOK_ASSIGN(remote_qpn, Required(req, "remote_qpn", 0xFFFFFF));
    HOOK_ASSIGN(remote_qkey, Num(req, "remote_qkey", 0x11111111, 0xFFFFFFFF));
    wr.ud = {static_cast<nic::AhHandle>(ah), static_cast<uint32_t>(remote_qpn),
             static_cast<uint32_t>(remote_qkey)};
  }
  // "count" posts the same request again with consecutive wr_ids (load
  // generation); a full send queue stops it and reports how many went in.
  uint64_t posted = 0;
  for (; posted < count; ++posted) {
    wr.wr_id = wr_id + posted;
    absl::Status s = p.port->rnic().PostSend(static_cast<uint32_t>(qpn), wr);
    if (!s.ok()) {
      if (posted == 0) return s;
      break;
    }
  }
  return Reply{{"ok", true}, {"posted", posted}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::PostRecv(
    PortState& p, const ControlRequest& req) {
  HOOK_ASSIGN(qpn, OwnQp(p, req));
  HOOK_ASSIGN(wr_id, Num(req, "wr_id", 0));
  HOOK_ASSIGN(count, Num(req, "count", 1, kMaxPostCount));
  HOOK_ASSIGN(len, Num(req, "len", 0, 0xFFFFFFFF));
  nic::RecvWr wr;
  if (len > 0) {
    HOOK_ASSIGN(laddr, Required(req, "laddr"));
    HOOK_ASSIGN(lkey, Required(req, "lkey", 0xFFFFFFFF));
    wr.sg_list.PushBack(
        {laddr, static_cast<uint32_t>(len), static_cast<uint32_t>(lkey)});
  }
  uint64_t posted = 0;
  for (; posted < count; ++posted) {
    wr.wr_id = wr_id + posted;
    absl::Status s = p.port->rnic().PostRecv(static_cast<uint32_t>(qpn), wr);
    if (!s.ok()) {
      if (posted == 0) return s;
      break;
    }
  }
  return Reply{{"ok", true}, {"posted", posted}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::PollCq(PortState& p,
                                                   const ControlRequest& req) {
  HOOK_ASSIGN(cq, OwnCq(p, req, "cq", std::nullopt));
  HOOK_ASSIGN(max, Num(req, "max", 16, kMaxPollBatch));
  // "summary": only counts per status (for load runs).
  bool summary = false;
  req.Bool("summary", &summary);
  Reply wcs = Reply::array();
  nic::WorkCompletion wc[64];
  uint64_t total = 0, ok = 0, errors = 0, bytes = 0;
  std::string first_error;
  while (total < max) {
    size_t n = p.port->rnic().PollCq(
        static_cast<nic::CqHandle>(cq),
        {wc, static_cast<size_t>(std::min<uint64_t>(64, max - total))});
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) {
      const nic::WorkCompletion& w = wc[i];
      if (w.status == nic::WcStatus::kSuccess) {
        ++ok;
        bytes += w.byte_len;
      } else {
        ++errors;
        if (first_error.empty()) first_error = nic::WcStatusName(w.status);
      }
      if (summary) continue;
      wcs.push_back({{"wr_id", w.wr_id},
                     {"status", nic::WcStatusName(w.status)},
                     {"opcode", nic::WcOpcodeName(w.opcode)},
                     {"byte_len", w.byte_len},
                     {"imm", w.imm_data},
                     {"with_imm", (w.wc_flags & nic::wc_flags::kWithImm) != 0},
                     {"qp_num", w.qp_num},
                     {"src_qp", w.src_qp}});
    }
    total += n;
  }
  return Reply{{"ok", true},
               {"wcs", std::move(wcs)},
               {"count", total},
               {"success", ok},
               {"errors", errors},
               {"bytes", bytes},
               {"first_error", first_error}};
}

absl::StatusOr<TestHooks::Reply> TestHooks::MrRead(PortState& p,
                                                   const ControlRequest& req,
                                                   bool digest) {
  HOOK_ASSIGN(key, Required(req, "key", 0xFFFFFFFF));
  auto it = p.buffers.find(static_cast<uint32_t>(key));
  if (it == p.buffers.end()) return absl::NotFoundError("no such MR");
  Buffer& b = it->second;
  HOOK_ASSIGN(offset, Num(req, "offset", 0));
  HOOK_ASSIGN(len, Num(req, "len", b.len - std::min(offset, b.len)));
  if (offset > b.len || len > b.len - offset) {
    return absl::OutOfRangeError("range outside the MR");
  }
  const uint8_t* data = b.data() + offset;
  if (digest) {
    // CRC-32 (zlib / IEEE), so a test can recompute it with zlib.crc32.
    uLong crc = crc32(0L, Z_NULL, 0);
    uint64_t done = 0;
    while (done < len) {
      uInt chunk = static_cast<uInt>(std::min<uint64_t>(len - done, 1u << 30));
      crc = crc32(crc, data + done, chunk);
      done += chunk;
    }
    return Reply{
        {"ok", true}, {"crc32", static_cast<uint32_t>(crc)}, {"len", len}};
  }
  if (len > kMaxReadBytes) {
    return absl::OutOfRangeError(
        absl::StrCat("mr_read returns at most ", kMaxReadBytes,
                     " bytes; use mr_digest for more"));
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * len);
  for (uint64_t i = 0; i < len; ++i) {
    hex += kHex[data[i] >> 4];
    hex += kHex[data[i] & 15];
  }
  return Reply{{"ok", true}, {"hex", std::move(hex)}};
}

}  // namespace rocemu::emulator
