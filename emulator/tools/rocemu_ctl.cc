// rocemu-ctl: asks a running rocemud about its devices, ports, QPs, MRs,
// application clients, counters and PFC/DCQCN state over the control
// socket, and prints it the way ibv_devinfo, `rdma resource show` and
// `rdma statistic` do (or the daemon's JSON with --json).
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "emulator/tools/json_value.h"
#include "nic/drop_reason.h"
#include "verbs/server/json_writer.h"

ABSL_FLAG(std::string, socket, "/run/rocemu/rocemud.sock",
          "the daemon's control socket (control.socket)");
ABSL_FLAG(std::string, netdev, "",
          "the daemon of `rocemud --netdev IFACE`: its socket "
          "/run/rocemu/rocemud-IFACE.sock");
ABSL_FLAG(bool, json, false, "print the daemon's JSON reply instead of text");
ABSL_FLAG(int, timeout_ms, 5000, "how long to wait for the daemon's answer");
ABSL_FLAG(int, interval_ms, 100, "watch: time between two samples");
ABSL_FLAG(int, samples, 0, "watch: samples to take (0: until interrupted)");
ABSL_FLAG(bool, drops, false,
          "counters: the frames dropped, NAKed or held per reason instead");
ABSL_FLAG(bool, why, false, "qp N: why the QP is where it is (its dump)");
ABSL_FLAG(std::string, pcapng, "",
          "qp N --why: where to write the QP's frames (default "
          "rocemu-qpN.pcapng; 'none': not written)");
ABSL_FLAG(std::string, port, "", "qp N --why: the port (default: any)");

namespace rocemu::tools {
namespace {

constexpr char kUsage[] =
    "rocemu-ctl [--socket PATH | --netdev IFACE] [--json] COMMAND\n"
    "  devices        RDMA devices (ibv_devinfo)\n"
    "  ports          ports: state, MAC, MTUs, GID and P_Key tables\n"
    "  qps            queue pairs (rdma resource show qp)\n"
    "  cm             connection manager ids (rdma resource show cm_id)\n"
    "  mrs            memory regions of attached applications\n"
    "  clients        attached applications and what they hold\n"
    "  counters       port, RNIC, PFC, DCQCN and verbs counters\n"
    "  counters --drops  frames dropped, NAKed or held, per reason\n"
    "  why            every QP in error, with one line of cause\n"
    "  qp N --why     QP N's flight recorder: text, and its frames as pcapng\n"
    "                 (--pcapng FILE, --port NAME)\n"
    "  pfc            PFC priorities, pause state and pause counters\n"
    "  dcqcn          DCQCN parameters, counters and per-QP rates\n"
    "  capture on|off switch pcap capture\n"
    "  watch          sample congestion state every --interval_ms as CSV\n"
    "                 (time_s,port,qpn,metric,value; scripts/plot_watch.sh)";

// One request line, one reply line (emulator/control/control_server.h).
absl::StatusOr<std::string> Ask(const std::string& path,
                                const std::string& request) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(addr.sun_path)) {
    return absl::InvalidArgumentError(
        absl::StrCat("bad socket path '", path, "'"));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ErrnoToStatus(errno, "socket");
  const int ms = std::max(1, absl::GetFlag(FLAGS_timeout_ms));
  timeval tv{ms / 1000, (ms % 1000) * 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    absl::Status s = absl::ErrnoToStatus(
        errno, absl::StrCat("cannot connect to ", path,
                            " (is rocemud running? --socket)"));
    close(fd);
    return s;
  }
  std::string line = request + "\n";
  for (size_t off = 0; off < line.size();) {
    ssize_t n = send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n <= 0) {
      absl::Status s = absl::ErrnoToStatus(errno, "send");
      close(fd);
      return s;
    }
    off += static_cast<size_t>(n);
  }
  std::string reply;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n > 0) {
      reply.append(buf, static_cast<size_t>(n));
      if (reply.back() == '\n') break;
      continue;
    }
    absl::Status s =
        n == 0 ? absl::UnavailableError("the daemon closed the connection")
               : absl::ErrnoToStatus(errno, "no answer from the daemon");
    close(fd);
    return s;
  }
  close(fd);
  reply.pop_back();
  return reply;
}

// --socket, or the socket `rocemud --netdev IFACE` listens on.
// A request naming only its command.
std::string Request(const std::string& cmd) {
  return verbs::DumpJson(nlohmann::ordered_json{{"cmd", cmd}});
}

std::string SocketPath() {
  const std::string netdev = absl::GetFlag(FLAGS_netdev);
  if (!netdev.empty())
    return absl::StrCat("/run/rocemu/rocemud-", netdev, ".sock");
  return absl::GetFlag(FLAGS_socket);
}

absl::StatusOr<JsonValue> Query(const std::string& request, std::string* raw) {
  absl::StatusOr<std::string> reply = Ask(SocketPath(), request);
  if (!reply.ok()) return reply.status();
  if (raw != nullptr) *raw = *reply;
  absl::StatusOr<JsonValue> v = JsonValue::Parse(*reply);
  if (!v.ok()) return v.status();
  if (const JsonValue& err = (*v)["error"]; err.is_string()) {
    return absl::FailedPreconditionError(err.text());
  }
  return v;
}

// Columns padded to their widest cell, two spaces apart, as `rdma -p`
// style tools print.
class Table {
 public:
  explicit Table(std::vector<std::string> header) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  size_t size() const { return rows_.size() - 1; }
  void Print() const {
    std::vector<size_t> width;
    for (const auto& r : rows_) {
      width.resize(std::max(width.size(), r.size()));
      for (size_t i = 0; i < r.size(); ++i) {
        width[i] = std::max(width[i], r[i].size());
      }
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        absl::StrAppend(&line, r[i]);
        if (i + 1 < r.size()) line.append(width[i] - r[i].size() + 2, ' ');
      }
      std::printf("%s\n", line.c_str());
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

std::string S(const JsonValue& v) { return v.ToString(); }

// "IBV_PORT_ACTIVE" -> "PORT_ACTIVE (4)", as ibv_devinfo prints it.
std::string PortState(const std::string& name) {
  static constexpr const char* kStates[] = {"NOP",   "DOWN",   "INIT",
                                            "ARMED", "ACTIVE", "ACTIVE_DEFER"};
  std::string s = name.rfind("IBV_", 0) == 0 ? name.substr(4) : name;
  for (int i = 0; i < 6; ++i) {
    if (s == absl::StrCat("PORT_", kStates[i])) {
      return absl::StrCat(s, " (", i, ")");
    }
  }
  return s;
}

// 1024 -> "1024 (3)": the IB MTU and its enum value.
std::string Mtu(const JsonValue& v) {
  const double bytes = v.number();
  if (bytes < 256) return S(v);
  return absl::StrCat(S(v), " (", static_cast<int>(std::log2(bytes)) - 7, ")");
}

int PrintDevices(bool json) {
  std::string raw;
  absl::StatusOr<JsonValue> devs = Query(Request("devices"), &raw);
  if (!devs.ok()) {
    std::fprintf(stderr, "rocemu-ctl: %s\n", devs.status().ToString().c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", raw.c_str());
    return 0;
  }
  absl::StatusOr<JsonValue> ports = Query(Request("ports"), nullptr);
  if (!ports.ok()) {
    std::fprintf(stderr, "rocemu-ctl: %s\n", ports.status().ToString().c_str());
    return 1;
  }
  for (const JsonValue& d : (*devs)["devices"].items()) {
    const JsonValue& a = d["attr"];
    std::printf("hca_id:\t%s\n", S(d["device"]).c_str());
    std::printf("\ttransport:\t\t\t%s (0)\n", S(a["transport"]).c_str());
    std::printf("\tfw_ver:\t\t\t\t%s\n", S(a["fw_ver"]).c_str());
    std::printf("\tnode_guid:\t\t\t%s\n", S(a["node_guid"]).c_str());
    std::printf("\tsys_image_guid:\t\t\t%s\n", S(a["sys_image_guid"]).c_str());
    std::printf("\tvendor_id:\t\t\t%s\n", S(a["vendor_id"]).c_str());
    std::printf("\tvendor_part_id:\t\t\t%s\n", S(a["vendor_part_id"]).c_str());
    std::printf("\thw_ver:\t\t\t\t%s\n", S(a["hw_ver"]).c_str());
    std::printf("\tphys_port_cnt:\t\t\t%s\n", S(a["phys_port_cnt"]).c_str());
    std::printf("\tnet_port:\t\t\t%s (%s)\n", S(d["port"]).c_str(),
                S(d["devargs"]).c_str());
    std::printf(
        "\tverbs_socket:\t\t\t%s (%s client(s))\n",
        d["verbs_socket"].is_null() ? "none" : S(d["verbs_socket"]).c_str(),
        S(d["clients"]).c_str());
    for (const char* k : {"max_qp", "max_qp_wr", "max_sge", "max_cq", "max_cqe",
                          "max_mr", "max_pd", "max_qp_rd_atom"}) {
      std::printf("\t%s:%s%s\n", k, std::strlen(k) < 7 ? "\t\t\t\t" : "\t\t\t",
                  S(a[k]).c_str());
    }
    for (const JsonValue& p : (*ports)["ports"].items()) {
      if (S(p["device"]) != S(d["device"])) continue;
      const JsonValue& pa = p["attr"];
      std::printf("\t\tport:\t%s\n", S(pa["port"]).c_str());
      std::printf("\t\t\tstate:\t\t\t%s\n", PortState(S(pa["state"])).c_str());
      std::printf("\t\t\tmax_mtu:\t\t%s\n", Mtu(pa["max_mtu"]).c_str());
      std::printf("\t\t\tactive_mtu:\t\t%s\n", Mtu(pa["active_mtu"]).c_str());
      std::printf("\t\t\tsm_lid:\t\t\t0\n\t\t\tport_lid:\t\t0\n");
      std::printf("\t\t\tport_lmc:\t\t0x00\n");
      std::printf("\t\t\tlink_layer:\t\t%s\n", S(pa["link_layer"]).c_str());
      for (const JsonValue& g : pa["gids"].items()) {
        std::printf("\t\t\tGID[%3s]:\t\t%s, %s (%s)\n", S(g["index"]).c_str(),
                    S(g["gid"]).c_str(), S(g["type"]).c_str(),
                    S(g["ip"]).c_str());
      }
    }
    std::printf("\n");
  }
  return 0;
}

int PrintPorts(const JsonValue& v) {
  Table t({"PORT", "DEVICE", "STATE", "MAC", "LINK_MTU", "ACTIVE_MTU",
           "MAX_MTU", "ADDRESSES", "NEIGHBOURS", "RX_PACKETS", "TX_PACKETS"});
  Table gids({"PORT", "GID_INDEX", "GID", "IP", "TYPE"});
  Table pkeys({"PORT", "PKEY_INDEX", "PKEY"});
  Table netdevs({"PORT", "NETDEV", "INDEX", "LINK", "MTU", "MODE"});
  bool any_netdev = false;
  for (const JsonValue& p : v["ports"].items()) {
    const JsonValue& a = p["attr"];
    if (const JsonValue& n = p["netdev"]; n.is_object()) {
      any_netdev = true;
      netdevs.Add({S(p["port"]), S(n["interface"]), S(n["index"]),
                   n["exists"].boolean() ? (n["up"].boolean() ? "up" : "down")
                                         : "deleted",
                   S(n["mtu"]), S(n["mode"])});
    }
    std::vector<std::string> addrs;
    for (const JsonValue& x : p["addresses"].items()) addrs.push_back(S(x));
    t.Add({S(p["port"]), S(p["device"]), PortState(S(a["state"])), S(p["mac"]),
           S(p["link_mtu"]), S(a["active_mtu"]), S(a["max_mtu"]),
           addrs.empty() ? "-" : absl::StrJoin(addrs, ","), S(p["neighbours"]),
           S(p["rx_packets"]), S(p["tx_packets"])});
    for (const JsonValue& g : a["gids"].items()) {
      gids.Add(
          {S(p["port"]), S(g["index"]), S(g["gid"]), S(g["ip"]), S(g["type"])});
    }
    for (const JsonValue& k : a["pkeys"].items()) {
      pkeys.Add({S(p["port"]), S(k["index"]), S(k["pkey"])});
    }
  }
  t.Print();
  std::printf("\n");
  gids.Print();
  std::printf("\n");
  pkeys.Print();
  if (any_netdev) {
    std::printf("\n");
    netdevs.Print();
  }
  return 0;
}

// A port's entry and, with eal.lcores above 1, each of its other RNIC
// shards' ("shards": the same keys for their QPs, CM ids and sessions).
template <typename F>
void ForEachShard(const JsonValue& port, F f) {
  f(port);
  for (const JsonValue& shard : port["shards"].items()) f(shard);
}

int PrintQps(const JsonValue& v) {
  Table t({"DEVICE", "PORT", "LQPN", "RQPN", "TYPE", "STATE", "SQ-PSN",
           "RQ-PSN", "MTU", "SQ", "RQ", "OWNER", "PID", "SENT_PKTS",
           "RCVD_PKTS"});
  for (const JsonValue& p : v["ports"].items()) {
    ForEachShard(p, [&](const JsonValue& part) {
      for (const JsonValue& q : part["qps"].items()) {
        t.Add({S(p["device"]), S(p["port"]), S(q["qpn"]), S(q["rqpn"]),
               S(q["type"]), S(q["state"]), S(q["sq_psn"]), S(q["rq_psn"]),
               S(q["path_mtu"]), S(q["sq_outstanding"]), S(q["rq_outstanding"]),
               S(q["owner"]), S(q["pid"]), S(q["counters"]["sent_pkts"]),
               S(q["counters"]["rcvd_pkts"])});
      }
    });
  }
  t.Print();
  return 0;
}

int PrintCm(const JsonValue& v) {
  Table t({"DEVICE", "ID", "STATE", "ROLE", "SERVICE-ID", "LQPN", "RQPN",
           "REMOTE", "BOUND", "PID"});
  for (const JsonValue& p : v["ports"].items()) {
    ForEachShard(p, [&](const JsonValue& part) {
      for (const JsonValue& c : part["cm_ids"].items()) {
        const char* role = c["listener"].boolean() ? "listen"
                           : c["active"].boolean() ? "active"
                                                   : "passive";
        t.Add({S(p["device"]), S(c["id"]), S(c["state"]), role,
               S(c["service_id"]), S(c["lqpn"]), S(c["rqpn"]), S(c["remote"]),
               S(c["bound"]), S(c["pid"])});
      }
    });
  }
  t.Print();
  return 0;
}

int PrintMrs(const JsonValue& v) {
  Table t({"DEVICE", "CLIENT", "PID", "KEY", "PD", "IOVA", "LENGTH", "ACCESS",
           "KIND"});
  for (const JsonValue& p : v["ports"].items()) {
    ForEachShard(p, [&](const JsonValue& part) {
      const JsonValue& s = part["verbs"];
      for (const JsonValue& c : s["clients"].items()) {
        for (const JsonValue& m : c["mrs"].items()) {
          t.Add({S(s["device"]), S(c["id"]), S(c["pid"]),
                 absl::StrFormat("0x%x",
                                 static_cast<uint64_t>(m["key"].number())),
                 S(m["pd"]),
                 absl::StrFormat("0x%x",
                                 static_cast<uint64_t>(m["iova"].number())),
                 S(m["length"]),
                 absl::StrFormat("0x%x",
                                 static_cast<uint64_t>(m["access"].number())),
                 S(m["kind"])});
        }
      }
    });
  }
  t.Print();
  return 0;
}

int PrintClients(const JsonValue& v) {
  Table t({"DEVICE", "SOCKET", "CLIENT", "PID", "UID", "GID", "NAME", "PDS",
           "MRS", "CQS", "QPS", "AHS"});
  for (const JsonValue& p : v["ports"].items()) {
    ForEachShard(p, [&](const JsonValue& part) {
      const JsonValue& s = part["verbs"];
      for (const JsonValue& c : s["clients"].items()) {
        std::vector<std::string> qps;
        for (const JsonValue& q : c["qps"].items()) qps.push_back(S(q["qpn"]));
        t.Add({S(s["device"]), S(s["socket"]), S(c["id"]), S(c["pid"]),
               S(c["uid"]), S(c["gid"]), S(c["name"]),
               absl::StrCat(c["pds"].items().size()),
               absl::StrCat(c["mrs"].items().size()),
               absl::StrCat(c["cqs"].items().size()),
               qps.empty() ? "0"
                           : absl::StrCat(qps.size(), " (",
                                          absl::StrJoin(qps, ","), ")"),
               absl::StrCat(c["ahs"].items().size())});
      }
    });
  }
  t.Print();
  return 0;
}

// name value pairs, several to a line, like `rdma statistic show`.
void PrintPairs(const std::string& title,
                const std::vector<std::pair<std::string, std::string>>& kv) {
  std::printf("%s\n", title.c_str());
  size_t w = 0;
  for (const auto& [k, val] : kv) w = std::max(w, k.size() + val.size() + 1);
  constexpr size_t kPerLine = 3;
  for (size_t i = 0; i < kv.size(); ++i) {
    std::string cell = absl::StrCat(kv[i].first, " ", kv[i].second);
    std::printf("  %-*s", static_cast<int>(w), cell.c_str());
    if (i % kPerLine == kPerLine - 1 || i + 1 == kv.size()) std::printf("\n");
  }
}

void Scalars(const JsonValue& obj,
             std::vector<std::pair<std::string, std::string>>* out) {
  for (const auto& [k, val] : obj.members()) {
    if (val.is_number()) out->emplace_back(k, val.text());
  }
}

int PrintCounters(const JsonValue& v) {
  for (const auto& [name, p] : v["ports"].members()) {
    std::vector<std::pair<std::string, std::string>> kv;
    Scalars(p, &kv);
    Scalars(p["rnic"], &kv);
    Scalars(p["pfc"]["counters"], &kv);
    kv.emplace_back("cnp_dropped",
                    p["dcqcn"]["counters"]["cnp_dropped"].ToString());
    PrintPairs(absl::StrCat("link rocemu_", name, "/1 (port ", name, ", mac ",
                            S(p["mac"]), ")"),
               kv);
    if (p["verbs"].is_object()) {
      kv.clear();
      Scalars(p["verbs"]["counters"], &kv);
      PrintPairs(absl::StrCat("verbs ", S(p["verbs"]["socket"])), kv);
    }
    for (const auto& [qpn, q] : p["rnic"]["qps"].members()) {
      kv.clear();
      Scalars(q, &kv);
      PrintPairs(
          absl::StrCat("qp ", qpn, " ", S(q["type"]), " ", S(q["state"])), kv);
    }
    // eal.lcores above 1: each other shard's loop, RNIC, session and QPs.
    for (const JsonValue& sh : p["shards"].items()) {
      kv.clear();
      Scalars(sh, &kv);
      Scalars(sh["rnic"], &kv);
      PrintPairs(absl::StrCat("shard ", S(sh["shard"]), " of ", name), kv);
      if (sh["verbs"].is_object()) {
        kv.clear();
        Scalars(sh["verbs"]["counters"], &kv);
        PrintPairs(absl::StrCat("shard ", S(sh["shard"]), " verbs"), kv);
      }
      for (const auto& [qpn, q] : sh["rnic"]["qps"].members()) {
        kv.clear();
        Scalars(q, &kv);
        PrintPairs(absl::StrCat("qp ", qpn, " ", S(q["type"]), " ",
                                S(q["state"]), " (shard ", S(sh["shard"]), ")"),
                   kv);
      }
    }
    std::printf("\n");
  }
  return 0;
}

int PrintDrops(const JsonValue& v) {
  Table t({"PORT", "REASON", "COUNT", "MEANING"});
  for (const auto& [name, p] : v["ports"].members()) {
    for (const auto& [reason, n] : p["drops"].members()) {
      const char* text = "";
      for (size_t i = 0; i < nic::kDropReasonCount; ++i) {
        if (reason == nic::kDropReasonNames[i]) text = nic::kDropReasonTexts[i];
      }
      t.Add({name, reason, n.ToString(), text});
    }
  }
  if (t.size() == 0) {
    std::printf("no frame dropped, NAKed or held on any port\n");
    return 0;
  }
  t.Print();
  return 0;
}

int PrintWhy(const JsonValue& v) {
  Table t({"PORT", "QPN", "TYPE", "STATE", "WHY"});
  for (const JsonValue& q : v["qps"].items()) {
    t.Add({S(q["port"]), S(q["qpn"]), S(q["type"]),
           absl::StrCat(S(q["from"]), "->", S(q["state"]),
                        q["destroyed"].boolean() ? " (destroyed)" : ""),
           S(q["why"])});
  }
  if (t.size() == 0) {
    std::printf("no QP in ERR or SQE\n");
    return 0;
  }
  t.Print();
  return 0;
}

// qp N --why: the report, and the recorder's frames written as pcapng.
int PrintQpWhy(const JsonValue& v, const std::string& qpn) {
  std::printf("%s", v["report"].text().c_str());
  std::string path = absl::GetFlag(FLAGS_pcapng);
  if (path == "none") return 0;
  if (path.empty()) path = absl::StrCat("rocemu-qp", qpn, ".pcapng");
  std::string bytes;
  if (!absl::Base64Unescape(v["pcapng_base64"].text(), &bytes)) {
    std::fprintf(stderr, "rocemu-ctl: the daemon's pcapng is not base64\n");
    return 1;
  }
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr ||
      std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() ||
      std::fclose(f) != 0) {
    std::fprintf(stderr, "rocemu-ctl: cannot write %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  std::printf("frames: %s (open with wireshark or tshark -r)\n", path.c_str());
  return 0;
}

int PrintPfc(const JsonValue& v) {
  Table t({"PORT", "PRIO", "PFC", "PAUSED", "RX_PAUSE", "RX_PAUSE_DURATION_US",
           "TX_PAUSE"});
  for (const JsonValue& p : v["ports"].items()) {
    const JsonValue& f = p["pfc"];
    auto in = [](const JsonValue& list, int prio) {
      for (const JsonValue& x : list.items()) {
        if (static_cast<int>(x.number()) == prio) return true;
      }
      return false;
    };
    for (int prio = 0; prio < 8; ++prio) {
      const JsonValue& c = f["counters"];
      t.Add({S(p["port"]), absl::StrCat(prio),
             in(f["enabled"], prio) ? "on" : "off",
             in(f["paused"], prio) ? "yes" : "no",
             S(c[absl::StrCat("rx_prio", prio, "_pause")]),
             S(c[absl::StrCat("rx_prio", prio, "_pause_duration")]),
             S(c[absl::StrCat("tx_prio", prio, "_pause")])});
    }
    t.Add({S(p["port"]), "global", "-", "-",
           S(f["counters"]["rx_global_pause"]),
           S(f["counters"]["rx_global_pause_duration"]),
           S(f["counters"]["tx_global_pause"])});
  }
  t.Print();
  return 0;
}

int PrintDcqcn(const JsonValue& v) {
  for (const JsonValue& p : v["ports"].items()) {
    const JsonValue& d = p["dcqcn"];
    std::vector<std::pair<std::string, std::string>> kv;
    for (const auto& [k, val] : d.members()) {
      if (val.is_number() || val.is_bool()) kv.emplace_back(k, val.text());
    }
    PrintPairs(absl::StrCat("port ", S(p["port"]), " parameters"), kv);
    kv.clear();
    Scalars(d["counters"], &kv);
    PrintPairs(absl::StrCat("port ", S(p["port"]), " counters"), kv);
    Table t({"QPN", "RP_ACTIVE", "CURRENT_RATE_MBPS", "TARGET_RATE_MBPS",
             "ALPHA", "RP_CNP_HANDLED", "RP_CNP_IGNORED", "CNP_RECEIVED"});
    for (const JsonValue& q : d["qps"].items()) {
      t.Add({S(q["qpn"]), S(q["active"]), S(q["current_rate_mbps"]),
             S(q["target_rate_mbps"]), S(q["alpha"]), S(q["rp_cnp_handled"]),
             S(q["rp_cnp_ignored"]), S(q["cnp_received"])});
    }
    t.Print();
    std::printf("\n");
  }
  return 0;
}

// Tidy CSV, one row per value, so that any number of QPs and ports fits
// one header: per port the PFC, NP/RP and congestion-point counters, per
// QP its reaction point (rate, target, alpha, CNPs) and its byte counters
// (goodput is their slope). Times are seconds since the first sample.
int Watch() {
  const int interval_ms = std::max(1, absl::GetFlag(FLAGS_interval_ms));
  const int samples = absl::GetFlag(FLAGS_samples);
  std::printf("time_s,port,qpn,metric,value\n");
  timespec start{};
  clock_gettime(CLOCK_MONOTONIC, &start);
  for (int i = 0; samples <= 0 || i < samples; ++i) {
    absl::StatusOr<JsonValue> v = Query(Request("counters"), nullptr);
    if (!v.ok()) {
      std::fprintf(stderr, "rocemu-ctl: %s\n", v.status().ToString().c_str());
      return 1;
    }
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    const double t = static_cast<double>(now.tv_sec - start.tv_sec) +
                     static_cast<double>(now.tv_nsec - start.tv_nsec) * 1e-9;
    auto row = [&](const std::string& port, const std::string& qpn,
                   const std::string& metric, const std::string& value) {
      std::printf("%.6f,%s,%s,%s,%s\n", t, port.c_str(), qpn.c_str(),
                  metric.c_str(), value.c_str());
    };
    for (const auto& [name, p] : (*v)["ports"].members()) {
      std::vector<std::pair<std::string, std::string>> kv;
      Scalars(p["pfc"]["counters"], &kv);
      Scalars(p["dcqcn"]["counters"], &kv);
      if (p["congestion_point"].is_object()) {
        std::vector<std::pair<std::string, std::string>> cp;
        Scalars(p["congestion_point"], &cp);
        for (auto& [k, val] : cp) kv.emplace_back("cp_" + k, val);
      }
      for (const auto& [k, val] : kv) row(name, "", k, val);
      for (const JsonValue& q : p["dcqcn"]["qps"].items()) {
        const std::string qpn = S(q["qpn"]);
        for (const char* k : {"current_rate_mbps", "target_rate_mbps", "alpha",
                              "rp_cnp_handled", "cnp_received"}) {
          row(name, qpn, k, S(q[k]));
        }
      }
      for (const auto& [qpn, q] : p["rnic"]["qps"].members()) {
        for (const char* k : {"sent_bytes", "rcvd_bytes"}) {
          row(name, qpn, k, S(q[k]));
        }
      }
    }
    std::fflush(stdout);
    if (samples > 0 && i + 1 == samples) break;
    // The next tick on the start's grid, however long this one took.
    const int64_t elapsed_ms = static_cast<int64_t>(t * 1000);
    const int64_t next_ms = (elapsed_ms / interval_ms + 1) * interval_ms;
    usleep(static_cast<useconds_t>((next_ms - elapsed_ms) * 1000));
  }
  return 0;
}

int Run(const std::vector<char*>& args) {
  const bool json = absl::GetFlag(FLAGS_json);
  if (args.size() < 2) {
    std::fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
  }
  const std::string cmd = args[1];
  if (cmd == "devices" && args.size() == 2) return PrintDevices(json);
  if (cmd == "watch" && args.size() == 2) return Watch();
  std::string request;
  int (*print)(const JsonValue&) = nullptr;
  std::string qpn;
  if (cmd == "qp") {
    if (args.size() != 3 || !absl::GetFlag(FLAGS_why)) {
      std::fprintf(stderr, "usage: rocemu-ctl qp QPN --why\n");
      return 2;
    }
    qpn = args[2];
    uint64_t n = 0;
    if (!absl::SimpleAtoi(qpn, &n) &&
        !(qpn.rfind("0x", 0) == 0 && absl::SimpleHexAtoi(qpn.substr(2), &n))) {
      std::fprintf(stderr, "rocemu-ctl: bad QP number '%s'\n", qpn.c_str());
      return 2;
    }
    qpn = absl::StrCat(n);
    nlohmann::ordered_json r = {{"cmd", "qp_why"}, {"qpn", n}};
    const std::string port = absl::GetFlag(FLAGS_port);
    if (!port.empty()) r["port"] = port;
    request = verbs::DumpJson(r);
  } else if (cmd == "capture") {
    const std::string arg = args.size() == 3 ? args[2] : "";
    if (arg != "on" && arg != "off") {
      std::fprintf(stderr, "usage: rocemu-ctl capture on|off\n");
      return 2;
    }
    request = verbs::DumpJson(
        nlohmann::ordered_json{{"cmd", "capture"}, {"enable", arg == "on"}});
  } else if (args.size() != 2) {
    std::fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
  } else if (cmd == "ports") {
    print = PrintPorts;
  } else if (cmd == "qps") {
    print = PrintQps;
  } else if (cmd == "cm") {
    print = PrintCm;
  } else if (cmd == "mrs") {
    print = PrintMrs;
  } else if (cmd == "clients") {
    print = PrintClients;
  } else if (cmd == "counters") {
    print = absl::GetFlag(FLAGS_drops) ? PrintDrops : PrintCounters;
  } else if (cmd == "why") {
    print = PrintWhy;
  } else if (cmd == "pfc") {
    print = PrintPfc;
  } else if (cmd == "dcqcn") {
    print = PrintDcqcn;
  } else {
    std::fprintf(stderr, "rocemu-ctl: unknown command '%s'\nusage: %s\n",
                 cmd.c_str(), kUsage);
    return 2;
  }
  if (request.empty()) request = Request(cmd);
  std::string raw;
  absl::StatusOr<JsonValue> v = Query(request, &raw);
  if (!v.ok()) {
    std::fprintf(stderr, "rocemu-ctl: %s\n", v.status().ToString().c_str());
    return 1;
  }
  if (json) {
    std::printf("%s\n", raw.c_str());
    return 0;
  }
  if (!qpn.empty()) return PrintQpWhy(*v, qpn);
  if (print == nullptr) {  // capture
    std::printf("capture: %s\n", (*v)["capture"].boolean() ? "on" : "off");
    return 0;
  }
  return print(*v);
}

}  // namespace
}  // namespace rocemu::tools

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(rocemu::tools::kUsage);
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  return rocemu::tools::Run(args);
}
