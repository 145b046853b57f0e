#include "emulator/replay/replay_case.h"

#include <arpa/inet.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "config/status_macros.h"

namespace rocemu::replay {
namespace {

// Every failure becomes one line naming the file, position and key path.
class Errors {
 public:
  explicit Errors(std::string source) : source_(std::move(source)) {}
  absl::Status At(const YAML::Mark& mark, const std::string& key,
                  const std::string& problem) const {
    const int line = mark.is_null() ? 0 : mark.line + 1;
    const int col = mark.is_null() ? 0 : mark.column + 1;
    return absl::InvalidArgumentError(
        absl::StrFormat("%s:%d:%d: %s: %s", source_, line, col, key, problem));
  }

 private:
  std::string source_;
};

bool ParseUint(std::string s, uint64_t* out) {
  s.erase(std::remove(s.begin(), s.end(), '_'), s.end());
  int base = 10;
  std::string_view v = s;
  if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
    base = 16;
    v.remove_prefix(2);
  }
  if (v.empty()) return false;
  uint64_t r = 0;
  for (char c : v) {
    int d;
    if (c >= '0' && c <= '9') {
      d = c - '0';
    } else if (base == 16 && c >= 'a' && c <= 'f') {
      d = c - 'a' + 10;
    } else if (base == 16 && c >= 'A' && c <= 'F') {
      d = c - 'A' + 10;
    } else {
      return false;
    }
    if (r > (std::numeric_limits<uint64_t>::max() - d) / base) return false;
    r = r * base + d;
  }
  *out = r;
  return true;
}

bool ParseMac(const std::string& s, protocol::MacAddr* out) {
  std::vector<std::string> parts = absl::StrSplit(s, ':');
  if (parts.size() != 6) return false;
  for (size_t i = 0; i < 6; ++i) {
    uint64_t v;
    if (parts[i].size() != 2 || !ParseUint("0x" + parts[i], &v)) return false;
    (*out)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

bool ParseIp(const std::string& s, protocol::IpAddr* out) {
  in_addr v4;
  if (inet_pton(AF_INET, s.c_str(), &v4) == 1) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v4.s_addr);
    *out = protocol::Ipv4Mapped(b[0], b[1], b[2], b[3]);
    return true;
  }
  in6_addr v6;
  if (inet_pton(AF_INET6, s.c_str(), &v6) == 1) {
    std::copy(v6.s6_addr, v6.s6_addr + 16, out->begin());
    return true;
  }
  return false;
}

// A mapping whose keys are checked: Get() marks a key as known, Finish()
// rejects the rest.
class Map {
 public:
  Map(const Errors& errors, YAML::Node node, std::string path)
      : errors_(errors), node_(node), path_(std::move(path)) {}

  absl::Status Check() const {
    if (!node_.IsMap())
      return errors_.At(node_.Mark(), path_, "expected a mapping");
    std::set<std::string> seen;
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      const std::string k = it->first.Scalar();
      if (!seen.insert(k).second) {
        return errors_.At(it->first.Mark(), Key(k), "duplicate key");
      }
    }
    return absl::OkStatus();
  }
  std::string Key(const std::string& k) const {
    return path_.empty() ? k : absl::StrCat(path_, ".", k);
  }
  YAML::Node Get(const std::string& k) {
    known_.insert(k);
    // Const access: a missing key must not be inserted into the mapping.
    const YAML::Node& n = node_;
    return n[k];
  }
  absl::Status Finish() const {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (!known_.contains(it->first.Scalar())) {
        return errors_.At(it->first.Mark(), Key(it->first.Scalar()),
                          "unknown key");
      }
    }
    return absl::OkStatus();
  }
  const YAML::Node& node() const { return node_; }
  const Errors& errors() const { return errors_; }

  // Typed getters: absent keys leave *out unchanged unless `required`.
  absl::Status Uint(const std::string& k, uint64_t max, uint64_t* out,
                    bool required = false) {
    YAML::Node n = Get(k);
    if (!n) return Missing(k, required);
    uint64_t v;
    if (!n.IsScalar() || !ParseUint(n.Scalar(), &v)) {
      return errors_.At(n.Mark(), Key(k), "expected an unsigned integer");
    }
    if (v > max) {
      return errors_.At(n.Mark(), Key(k),
                        absl::StrFormat("%u is out of range [0, %u]", v, max));
    }
    *out = v;
    return absl::OkStatus();
  }
  template <typename T>
  absl::Status UintAs(const std::string& k, T* out, bool required = false,
                      uint64_t max = std::numeric_limits<T>::max()) {
    uint64_t v = *out;
    absl::Status s = Uint(k, max, &v, required);
    *out = static_cast<T>(v);
    return s;
  }
  absl::Status String(const std::string& k, std::string* out,
                      bool required = false) {
    YAML::Node n = Get(k);
    if (!n) return Missing(k, required);
    if (!n.IsScalar() || n.Scalar().empty()) {
      return errors_.At(n.Mark(), Key(k), "expected a non-empty string");
    }
    *out = n.Scalar();
    return absl::OkStatus();
  }
  absl::Status Bool(const std::string& k, bool* out) {
    YAML::Node n = Get(k);
    if (!n) return absl::OkStatus();
    if (n.IsScalar() && (n.Scalar() == "true" || n.Scalar() == "false")) {
      *out = n.Scalar() == "true";
      return absl::OkStatus();
    }
    return errors_.At(n.Mark(), Key(k), "expected true or false");
  }
  absl::Status Mac(const std::string& k, protocol::MacAddr* out,
                   bool required) {
    YAML::Node n = Get(k);
    if (!n) return Missing(k, required);
    if (!n.IsScalar() || !ParseMac(n.Scalar(), out)) {
      return errors_.At(n.Mark(), Key(k),
                        "expected a MAC address like 52:54:00:12:34:56");
    }
    return absl::OkStatus();
  }
  absl::Status Ip(const std::string& k, protocol::IpAddr* out, bool required) {
    YAML::Node n = Get(k);
    if (!n) return Missing(k, required);
    if (!n.IsScalar() || !ParseIp(n.Scalar(), out)) {
      return errors_.At(n.Mark(), Key(k), "expected an IPv4 or IPv6 address");
    }
    return absl::OkStatus();
  }
  // One of `choices` (name -> value).
  template <typename T>
  absl::Status Enum(const std::string& k,
                    const std::vector<std::pair<std::string, T>>& choices,
                    T* out, bool required = false) {
    YAML::Node n = Get(k);
    if (!n) return Missing(k, required);
    std::string names;
    for (const auto& [name, value] : choices) {
      if (n.IsScalar() && n.Scalar() == name) {
        *out = value;
        return absl::OkStatus();
      }
      absl::StrAppend(&names, names.empty() ? "" : ", ", name);
    }
    return errors_.At(n.Mark(), Key(k), "expected one of: " + names);
  }
  // A list of access right names.
  absl::Status Access(const std::string& k, nic::AccessFlags* out) {
    YAML::Node n = Get(k);
    if (!n) return absl::OkStatus();
    if (!n.IsSequence()) {
      return errors_.At(n.Mark(), Key(k), "expected a list of access rights");
    }
    static const std::pair<const char*, nic::AccessFlags> kNames[] = {
        {"local_write", nic::access::kLocalWrite},
        {"remote_write", nic::access::kRemoteWrite},
        {"remote_read", nic::access::kRemoteRead},
        {"remote_atomic", nic::access::kRemoteAtomic},
    };
    nic::AccessFlags f = 0;
    for (const YAML::Node& e : n) {
      bool found = false;
      for (const auto& [name, bit] : kNames) {
        if (e.IsScalar() && e.Scalar() == name) {
          f |= bit;
          found = true;
        }
      }
      if (!found) {
        return errors_.At(e.Mark(), Key(k),
                          "expected local_write, remote_write, remote_read or "
                          "remote_atomic");
      }
    }
    *out = f;
    return absl::OkStatus();
  }
  absl::Status Missing(const std::string& k, bool required) const {
    if (!required) return absl::OkStatus();
    return errors_.At(node_.Mark(), Key(k), "missing (required)");
  }

 private:
  const Errors& errors_;
  YAML::Node node_;
  std::string path_;
  std::set<std::string> known_;
};

// Applies `f(Map&, index)` to each element of the list at key `k`.
template <typename F>
absl::Status ForEachMap(Map& parent, const std::string& k, F&& f) {
  YAML::Node n = parent.Get(k);
  if (!n) return absl::OkStatus();
  if (!n.IsSequence()) {
    return parent.errors().At(n.Mark(), parent.Key(k), "expected a list");
  }
  for (size_t i = 0; i < n.size(); ++i) {
    Map m(parent.errors(), n[i], absl::StrFormat("%s[%u]", parent.Key(k), i));
    RETURN_IF_ERROR(m.Check());
    RETURN_IF_ERROR(f(m, i));
    RETURN_IF_ERROR(m.Finish());
  }
  return absl::OkStatus();
}

absl::Status ParseSges(
    Map& m, const absl::flat_hash_map<std::string, const MrSpec*>& mrs,
    std::vector<SgeSpec>* out) {
  return ForEachMap(m, "sges", [&](Map& s, size_t) -> absl::Status {
    SgeSpec sge;
    RETURN_IF_ERROR(s.String("mr", &sge.mr, true));
    RETURN_IF_ERROR(s.UintAs("offset", &sge.offset));
    RETURN_IF_ERROR(s.UintAs("length", &sge.length, true));
    auto it = mrs.find(sge.mr);
    if (it == mrs.end()) {
      return s.errors().At(s.node()["mr"].Mark(), s.Key("mr"),
                           "no MR named '" + sge.mr + "'");
    }
    if (sge.offset + sge.length > it->second->length) {
      return s.errors().At(
          s.node().Mark(), s.Key("length"),
          absl::StrFormat("offset %u + length %u exceeds MR "
                          "'%s' (%u bytes)",
                          sge.offset, sge.length, sge.mr, it->second->length));
    }
    out->push_back(sge);
    return absl::OkStatus();
  });
}

absl::Status ParseTop(const Errors& errors, YAML::Node root,
                      const std::string& base_dir, ReplayCase* c) {
  Map top(errors, root, "");
  RETURN_IF_ERROR(top.Check());
  // A misspelt top-level key is reported before what it leaves missing.
  for (const char* k :
       {"name", "description", "rnic", "pds", "mrs", "cqs", "qps", "cm",
        "input", "settle_ns", "max_output_frames"}) {
    (void)top.Get(k);
  }
  RETURN_IF_ERROR(top.Finish());
  RETURN_IF_ERROR(top.String("name", &c->name, true));
  RETURN_IF_ERROR(top.String("description", &c->description));

  {
    YAML::Node n = top.Get("rnic");
    if (!n) return top.Missing("rnic", true);
    Map m(errors, n, "rnic");
    RETURN_IF_ERROR(m.Check());
    RETURN_IF_ERROR(m.Mac("mac", &c->mac, true));
    RETURN_IF_ERROR(m.Ip("ip", &c->ip, true));
    RETURN_IF_ERROR(m.Enum<uint32_t>("active_mtu",
                                     {{"256", 256},
                                      {"512", 512},
                                      {"1024", 1024},
                                      {"2048", 2048},
                                      {"4096", 4096}},
                                     &c->active_mtu));
    YAML::Node pk = m.Get("pkeys");
    if (pk) {
      if (!pk.IsSequence() || pk.size() == 0 || pk.size() > 64) {
        return errors.At(pk.Mark(), "rnic.pkeys",
                         "expected a list of 1 to 64 P_Keys");
      }
      for (const YAML::Node& e : pk) {
        uint64_t v;
        if (!e.IsScalar() || !ParseUint(e.Scalar(), &v) || v > 0xFFFF ||
            (v & 0x7FFF) == 0) {
          return errors.At(e.Mark(), "rnic.pkeys",
                           "expected a P_Key in 0x0001..0xFFFF (not 0x8000)");
        }
        c->pkeys.push_back(static_cast<uint16_t>(v));
      }
    }
    RETURN_IF_ERROR(m.Finish());
  }

  {
    YAML::Node n = top.Get("pds");
    if (!n || !n.IsSequence() || n.size() == 0) {
      return errors.At(n ? n.Mark() : root.Mark(), "pds",
                       "expected a non-empty list of PD names");
    }
    for (const YAML::Node& e : n) {
      if (!e.IsScalar() || e.Scalar().empty()) {
        return errors.At(e.Mark(), "pds", "expected a PD name");
      }
      for (const std::string& p : c->pds) {
        if (p == e.Scalar()) return errors.At(e.Mark(), "pds", "duplicate PD");
      }
      c->pds.push_back(e.Scalar());
    }
  }
  auto has_pd = [&](const std::string& pd) {
    return std::find(c->pds.begin(), c->pds.end(), pd) != c->pds.end();
  };

  RETURN_IF_ERROR(ForEachMap(top, "mrs", [&](Map& m, size_t) -> absl::Status {
    MrSpec mr;
    RETURN_IF_ERROR(m.String("name", &mr.name, true));
    for (const MrSpec& o : c->mrs) {
      if (o.name == mr.name) {
        return errors.At(m.node()["name"].Mark(), m.Key("name"),
                         "duplicate MR name");
      }
    }
    RETURN_IF_ERROR(m.String("pd", &mr.pd, true));
    if (!has_pd(mr.pd)) {
      return errors.At(m.node()["pd"].Mark(), m.Key("pd"),
                       "no PD named '" + mr.pd + "'");
    }
    RETURN_IF_ERROR(m.UintAs("va", &mr.va, true));
    RETURN_IF_ERROR(m.Uint("length", 1ull << 30, &mr.length, true));
    if (mr.length == 0) {
      return errors.At(m.node()["length"].Mark(), m.Key("length"),
                       "must be at least 1");
    }
    if (mr.va + mr.length < mr.va) {
      return errors.At(m.node()["length"].Mark(), m.Key("length"),
                       "va + length wraps the address space");
    }
    RETURN_IF_ERROR(m.UintAs("rkey", &mr.rkey));
    if (mr.rkey != 0 && (mr.rkey >> 8) == 0) {
      return errors.At(m.node()["rkey"].Mark(), m.Key("rkey"),
                       "keys below 0x100 are never handed out");
    }
    if (mr.rkey >> 8 > 4096) {
      return errors.At(m.node()["rkey"].Mark(), m.Key("rkey"),
                       "key index (rkey >> 8) above 4096 is not supported");
    }
    RETURN_IF_ERROR(m.Access("access", &mr.access));
    if (!nic::AccessFlagsConsistent(mr.access)) {
      return errors.At(m.node()["access"].Mark(), m.Key("access"),
                       "remote_write and remote_atomic need local_write");
    }
    YAML::Node f = m.Get("fill");
    if (f) {
      Map fm(errors, f, m.Key("fill"));
      RETURN_IF_ERROR(fm.Check());
      RETURN_IF_ERROR(fm.Enum<FillPattern>("pattern",
                                           {{"zero", FillPattern::kZero},
                                            {"byte", FillPattern::kByte},
                                            {"ramp", FillPattern::kRamp},
                                            {"text", FillPattern::kText}},
                                           &mr.fill, true));
      RETURN_IF_ERROR(fm.UintAs("byte", &mr.fill_byte));
      RETURN_IF_ERROR(
          fm.String("text", &mr.fill_text, mr.fill == FillPattern::kText));
      if (mr.fill_text.size() > mr.length) {
        return errors.At(f["text"].Mark(), fm.Key("text"),
                         "longer than the MR");
      }
      RETURN_IF_ERROR(fm.Finish());
    }
    c->mrs.push_back(mr);
    return absl::OkStatus();
  }));
  for (size_t i = 0; i < c->mrs.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (c->mrs[i].rkey != 0 && c->mrs[i].rkey == c->mrs[j].rkey) {
        return errors.At(root["mrs"][i].Mark(),
                         absl::StrFormat("mrs[%u].rkey", i),
                         "same R_Key as mrs[" + std::to_string(j) + "]");
      }
      if (c->mrs[i].rkey != 0 && c->mrs[j].rkey != 0 &&
          (c->mrs[i].rkey >> 8) == (c->mrs[j].rkey >> 8)) {
        return errors.At(
            root["mrs"][i].Mark(), absl::StrFormat("mrs[%u].rkey", i),
            "same key index (rkey >> 8) as mrs[" + std::to_string(j) + "]");
      }
    }
  }
  absl::flat_hash_map<std::string, const MrSpec*> mr_by_name;
  for (const MrSpec& mr : c->mrs) mr_by_name[mr.name] = &mr;

  RETURN_IF_ERROR(ForEachMap(top, "cqs", [&](Map& m, size_t) -> absl::Status {
    CqSpec cq;
    RETURN_IF_ERROR(m.String("name", &cq.name, true));
    for (const CqSpec& o : c->cqs) {
      if (o.name == cq.name) {
        return errors.At(m.node()["name"].Mark(), m.Key("name"),
                         "duplicate CQ name");
      }
    }
    RETURN_IF_ERROR(m.UintAs("cqe", &cq.cqe, false, 1u << 16));
    if (cq.cqe == 0) {
      return errors.At(m.node()["cqe"].Mark(), m.Key("cqe"), "must be >= 1");
    }
    c->cqs.push_back(cq);
    return absl::OkStatus();
  }));
  auto has_cq = [&](const std::string& cq) {
    for (const CqSpec& o : c->cqs) {
      if (o.name == cq) return true;
    }
    return false;
  };

  RETURN_IF_ERROR(ForEachMap(top, "qps", [&](Map& m, size_t) -> absl::Status {
    QpSpec q;
    RETURN_IF_ERROR(m.UintAs("qpn", &q.qpn, true, 0xFFFFFF));
    if (q.qpn < 0x11 || q.qpn >= 0x11 + 4096) {
      return errors.At(m.node()["qpn"].Mark(), m.Key("qpn"),
                       "must be in [0x11, 0x1011) (QPNs the RNIC hands out "
                       "first)");
    }
    for (const QpSpec& o : c->qps) {
      if (o.qpn == q.qpn) {
        return errors.At(m.node()["qpn"].Mark(), m.Key("qpn"), "duplicate QPN");
      }
    }
    RETURN_IF_ERROR(m.Enum<nic::QpType>("type",
                                        {{"rc", nic::QpType::kRc},
                                         {"uc", nic::QpType::kUc},
                                         {"ud", nic::QpType::kUd}},
                                        &q.type, true));
    RETURN_IF_ERROR(m.String("pd", &q.pd, true));
    if (!has_pd(q.pd)) {
      return errors.At(m.node()["pd"].Mark(), m.Key("pd"),
                       "no PD named '" + q.pd + "'");
    }
    for (const char* k : {"send_cq", "recv_cq"}) {
      std::string* dst = std::string(k) == "send_cq" ? &q.send_cq : &q.recv_cq;
      RETURN_IF_ERROR(m.String(k, dst, true));
      if (!has_cq(*dst)) {
        return errors.At(m.node()[k].Mark(), m.Key(k),
                         "no CQ named '" + *dst + "'");
      }
    }
    RETURN_IF_ERROR(m.UintAs("max_send_wr", &q.max_send_wr, false, 4096));
    RETURN_IF_ERROR(m.UintAs("max_recv_wr", &q.max_recv_wr, false, 4096));
    RETURN_IF_ERROR(m.Access("access", &q.access));
    RETURN_IF_ERROR(m.UintAs("pkey_index", &q.pkey_index, false, 63));
    RETURN_IF_ERROR(m.UintAs("qkey", &q.qkey));
    RETURN_IF_ERROR(m.Enum<nic::QpState>("state",
                                         {{"init", nic::QpState::kInit},
                                          {"rtr", nic::QpState::kRtr},
                                          {"rts", nic::QpState::kRts}},
                                         &q.state));
    RETURN_IF_ERROR(m.Enum<nic::PathMtu>("path_mtu",
                                         {{"256", nic::PathMtu::kMtu256},
                                          {"512", nic::PathMtu::kMtu512},
                                          {"1024", nic::PathMtu::kMtu1024},
                                          {"2048", nic::PathMtu::kMtu2048},
                                          {"4096", nic::PathMtu::kMtu4096}},
                                         &q.path_mtu));
    // A QP the CM connects takes its peer from the REQ.
    const bool connected =
        q.type != nic::QpType::kUd && q.state != nic::QpState::kInit;
    RETURN_IF_ERROR(m.UintAs("dest_qpn", &q.dest_qpn, connected, 0xFFFFFF));
    RETURN_IF_ERROR(m.UintAs("rq_psn", &q.rq_psn, connected, 0xFFFFFF));
    RETURN_IF_ERROR(m.UintAs("sq_psn", &q.sq_psn, false, 0xFFFFFF));
    RETURN_IF_ERROR(m.Mac("remote_mac", &q.remote_mac, connected));
    RETURN_IF_ERROR(m.Ip("remote_ip", &q.remote_ip, connected));
    RETURN_IF_ERROR(m.UintAs("traffic_class", &q.traffic_class));
    RETURN_IF_ERROR(m.UintAs("hop_limit", &q.hop_limit));
    RETURN_IF_ERROR(m.UintAs("max_rd_atomic", &q.max_rd_atomic, false, 128));
    RETURN_IF_ERROR(
        m.UintAs("max_dest_rd_atomic", &q.max_dest_rd_atomic, false, 128));
    RETURN_IF_ERROR(m.UintAs("min_rnr_timer", &q.min_rnr_timer, false, 31));
    RETURN_IF_ERROR(m.UintAs("timeout", &q.timeout, false, 31));
    RETURN_IF_ERROR(m.UintAs("retry_cnt", &q.retry_cnt, false, 7));
    RETURN_IF_ERROR(m.UintAs("rnr_retry", &q.rnr_retry, false, 7));
    RETURN_IF_ERROR(ForEachMap(m, "recv", [&](Map& r, size_t) -> absl::Status {
      RecvSpec wr;
      RETURN_IF_ERROR(r.UintAs("wr_id", &wr.wr_id, true));
      RETURN_IF_ERROR(ParseSges(r, mr_by_name, &wr.sges));
      q.recvs.push_back(wr);
      return absl::OkStatus();
    }));
    if (q.recvs.size() > q.max_recv_wr) {
      return errors.At(m.node()["recv"].Mark(), m.Key("recv"),
                       "more receives than max_recv_wr");
    }
    RETURN_IF_ERROR(ForEachMap(m, "send", [&](Map& r, size_t) -> absl::Status {
      SendSpec wr;
      RETURN_IF_ERROR(r.UintAs("wr_id", &wr.wr_id, true));
      RETURN_IF_ERROR(r.Enum<nic::WrOpcode>(
          "opcode",
          {{"send", nic::WrOpcode::kSend},
           {"send_with_imm", nic::WrOpcode::kSendWithImm},
           {"rdma_write", nic::WrOpcode::kRdmaWrite},
           {"rdma_write_with_imm", nic::WrOpcode::kRdmaWriteWithImm},
           {"rdma_read", nic::WrOpcode::kRdmaRead},
           {"atomic_cmp_and_swp", nic::WrOpcode::kAtomicCmpAndSwp},
           {"atomic_fetch_and_add", nic::WrOpcode::kAtomicFetchAndAdd}},
          &wr.opcode, true));
      RETURN_IF_ERROR(r.Bool("signaled", &wr.signaled));
      RETURN_IF_ERROR(r.Bool("solicited", &wr.solicited));
      RETURN_IF_ERROR(r.UintAs("imm_data", &wr.imm_data));
      RETURN_IF_ERROR(r.UintAs("remote_va", &wr.remote_va));
      RETURN_IF_ERROR(r.UintAs("rkey", &wr.rkey));
      RETURN_IF_ERROR(r.UintAs("compare_add", &wr.compare_add));
      RETURN_IF_ERROR(r.UintAs("swap", &wr.swap));
      RETURN_IF_ERROR(r.UintAs("after_completions", &wr.after_completions,
                               false, 1u << 20));
      RETURN_IF_ERROR(ParseSges(r, mr_by_name, &wr.sges));
      q.sends.push_back(wr);
      return absl::OkStatus();
    }));
    if (q.sends.size() > q.max_send_wr) {
      return errors.At(m.node()["send"].Mark(), m.Key("send"),
                       "more sends than max_send_wr");
    }
    for (const SendSpec& wr : q.sends) {
      if (q.state == nic::QpState::kRtr ||
          (q.state == nic::QpState::kInit && wr.after_completions == 0)) {
        return errors.At(m.node()["send"].Mark(), m.Key("send"),
                         "sends need state rts (or, with a CM listener, "
                         "after_completions)");
      }
    }
    c->qps.push_back(q);
    return absl::OkStatus();
  }));
  if (c->qps.empty()) {
    return errors.At(root.Mark(), "qps", "expected at least one QP");
  }

  if (YAML::Node n = top.Get("cm")) {
    Map cm(errors, n, "cm");
    RETURN_IF_ERROR(cm.Check());
    (void)cm.Get("listen");
    RETURN_IF_ERROR(cm.Finish());
    RETURN_IF_ERROR(
        ForEachMap(cm, "listen", [&](Map& m, size_t) -> absl::Status {
          CmListenSpec l;
          RETURN_IF_ERROR(m.UintAs("service_id", &l.service_id, true));
          RETURN_IF_ERROR(m.UintAs("qp", &l.qpn, true, 0xFFFFFF));
          const QpSpec* qp = nullptr;
          for (const QpSpec& q : c->qps) {
            if (q.qpn == l.qpn) qp = &q;
          }
          if (qp == nullptr || qp->state != nic::QpState::kInit ||
              qp->type == nic::QpType::kUd) {
            return errors.At(m.node()["qp"].Mark(), m.Key("qp"),
                             "needs an RC or UC QP of the case in state init");
          }
          RETURN_IF_ERROR(m.UintAs("responder_resources",
                                   &l.responder_resources, false, 128));
          RETURN_IF_ERROR(
              m.UintAs("initiator_depth", &l.initiator_depth, false, 128));
          RETURN_IF_ERROR(
              m.UintAs("rnr_retry_count", &l.rnr_retry_count, false, 7));
          c->cm_listens.push_back(l);
          return absl::OkStatus();
        }));
  }
  for (const QpSpec& q : c->qps) {
    const bool listened =
        std::any_of(c->cm_listens.begin(), c->cm_listens.end(),
                    [&](const CmListenSpec& l) { return l.qpn == q.qpn; });
    if (q.state == nic::QpState::kInit && !listened) {
      return errors.At(root.Mark(), "qps",
                       absl::StrFormat("QP 0x%x in state init has no cm "
                                       "listener to connect it",
                                       q.qpn));
    }
  }

  {
    YAML::Node n = top.Get("input");
    if (!n) return top.Missing("input", true);
    Map m(errors, n, "input");
    RETURN_IF_ERROR(m.Check());
    std::string pcap;
    RETURN_IF_ERROR(m.String("pcap", &pcap, true));
    if (pcap.find("..") != std::string::npos || pcap[0] == '/') {
      return errors.At(n["pcap"].Mark(), "input.pcap",
                       "must be a path inside the case directory");
    }
    c->input_pcap = base_dir.empty() ? pcap : base_dir + "/" + pcap;
    if (::access(c->input_pcap.c_str(), R_OK) != 0) {
      return errors.At(n["pcap"].Mark(), "input.pcap",
                       "cannot read " + c->input_pcap);
    }
    RETURN_IF_ERROR(m.Enum<Select>("select",
                                   {{"dst_ip", Select::kDstIp},
                                    {"dst_mac", Select::kDstMac},
                                    {"all", Select::kAll}},
                                   &c->select));
    YAML::Node fr = m.Get("frames");
    if (fr) {
      if (!fr.IsSequence() || fr.size() == 0) {
        return errors.At(fr.Mark(), "input.frames",
                         "expected a non-empty list of frame numbers");
      }
      for (const YAML::Node& e : fr) {
        uint64_t v;
        if (!e.IsScalar() || !ParseUint(e.Scalar(), &v) || v == 0 ||
            v > 0xFFFFFFFF || (!c->frames.empty() && v <= c->frames.back())) {
          return errors.At(e.Mark(), "input.frames",
                           "expected increasing frame numbers from 1");
        }
        c->frames.push_back(static_cast<uint32_t>(v));
      }
    }
    RETURN_IF_ERROR(m.Finish());
  }
  RETURN_IF_ERROR(
      top.UintAs("settle_ns", &c->settle_ns, false, 3600ull * 1'000'000'000));
  RETURN_IF_ERROR(top.UintAs("max_output_frames", &c->max_output_frames, false,
                             10'000'000));
  return top.Finish();
}

}  // namespace

absl::StatusOr<ReplayCase> ParseReplayCase(const std::string& text,
                                           const std::string& source,
                                           const std::string& base_dir) {
  Errors errors(source);
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return errors.At(e.mark, "(yaml)", e.msg);
  }
  ReplayCase c;
  c.path = source;
  try {
    absl::Status s = ParseTop(errors, root, base_dir, &c);
    if (!s.ok()) return s;
  } catch (const YAML::Exception& e) {
    return errors.At(e.mark, "(yaml)", e.msg);
  }
  return c;
}

absl::StatusOr<ReplayCase> LoadReplayCase(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path + ": cannot read the case file");
  std::stringstream ss;
  ss << in.rdbuf();
  const size_t slash = path.rfind('/');
  const std::string dir =
      slash == std::string::npos ? "." : path.substr(0, slash);
  return ParseReplayCase(ss.str(), path, dir);
}

}  // namespace rocemu::replay
