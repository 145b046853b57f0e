#include "config/config.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rocemu::config {
namespace {

using ::testing::HasSubstr;

constexpr char kPort[] = R"(ports:
  - name: p0
    devargs: net_null0
)";

struct BadCase {
  const char* name;
  std::string yaml;
  const char* where;    // "line:col"
  const char* key;      // key path named in the error
  const char* problem;  // words the problem must contain
};

std::string WithPort(const std::string& extra) { return kPort + extra; }

class BadConfigTest : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfigTest, OneErrorNamingFileLineColumnAndKey) {
  const BadCase& c = GetParam();
  absl::StatusOr<Config> cfg = LoadConfigString(c.yaml, "bad.yaml");
  ASSERT_FALSE(cfg.ok()) << c.name;
  std::string msg(cfg.status().message());
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_THAT(
      msg, HasSubstr(std::string("bad.yaml:") + c.where + ": " + c.key + ": "))
      << msg;
  EXPECT_THAT(msg, HasSubstr(c.problem)) << msg;
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, BadConfigTest,
    ::testing::Values(
        BadCase{"unknown_top_key", WithPort("colour: blue\n"), "4:1", "colour",
                "unknown key"},
        BadCase{"unknown_port_key",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    addreses: [10.0.0.1/24]\n",
                "4:5", "ports[0].addreses", "unknown key"},
        BadCase{"wrong_type",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    mtu: big\n",
                "4:10", "ports[0].mtu", "expected an integer"},
        BadCase{"mtu_range",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    mtu: 65000\n",
                "4:10", "ports[0].mtu", "out of range [68, 9000]"},
        BadCase{"dscp_range",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    traffic_class: {roce_dscp: 64}\n",
                "4:32", "ports[0].traffic_class.roce_dscp", "out of range"},
        BadCase{"bad_ip",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    addresses: [10.0.0.300/24]\n",
                "4:17", "ports[0].addresses[0]", "not ADDRESS/PREFIX"},
        BadCase{"bad_prefix",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    addresses: [10.0.0.1/33]\n",
                "4:17", "ports[0].addresses[0]", "prefix length 33"},
        BadCase{"bad_mac",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    mac: 02:00:00:zz:00:01\n",
                "4:10", "ports[0].mac", "not a MAC"},
        BadCase{"multicast_mac",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    mac: 01:00:5e:00:00:01\n",
                "4:10", "ports[0].mac", "unicast"},
        BadCase{"duplicate_port",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "  - name: p0\n    devargs: net_null1\n",
                "4:11", "ports[1].name", "duplicate port name"},
        BadCase{"missing_devargs", "ports:\n  - name: p0\n", "2:5",
                "ports[0].devargs", "required"},
        BadCase{"no_ports", "logging: {level: info}\n", "1:1", "ports",
                "at least one port"},
        BadCase{"xon_above_xoff",
                WithPort("pfc:\n  xoff_bytes: 1000\n  xon_bytes: 2000\n"),
                "6:14", "pfc.xon_bytes", "below xoff_bytes"},
        BadCase{"kmin_above_kmax",
                WithPort("ecn: {kmin_bytes: 5000, kmax_bytes: 100}\n"), "4:19",
                "ecn.kmin_bytes", "must not exceed"},
        BadCase{"dcqcn_min_above_max",
                WithPort("dcqcn:\n  rp_min_rate: 5000\n  rp_max_rate: 1000\n"),
                "5:16", "dcqcn.rp_min_rate", "exceeds the maximum rate"},
        BadCase{"dcqcn_first_cnp_above_line_rate",
                WithPort("dcqcn: {rp_rate_to_set_on_first_cnp: 200000}\n"),
                "4:38", "dcqcn.rp_rate_to_set_on_first_cnp",
                "exceeds the maximum rate"},
        BadCase{"fault_rate",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    faults:\n      drop: 1.5\n",
                "5:13", "ports[0].faults.drop", "out of range"},
        BadCase{"congestion_point_headroom",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    congestion_point: {enabled: true, buffer_bytes: 65536}\n",
                "4:23", "ports[0].congestion_point.buffer_bytes",
                "must exceed pfc.xoff_bytes (98304)"},
        BadCase{"congestion_point_rate",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    congestion_point: {rate_mbps: 0}\n",
                "4:35", "ports[0].congestion_point.rate_mbps", "out of range"},
        BadCase{"vlan_id",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    vlan_id: 4095\n",
                "4:14", "ports[0].vlan_id", "out of range"},
        BadCase{"link_speed",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    link_speed_mbps: 0\n",
                "4:22", "ports[0].link_speed_mbps", "out of range"},
        BadCase{"bad_enum", WithPort("logging:\n  level: verbose\n"), "5:10",
                "logging.level", "not one of"},
        BadCase{"bad_mode", WithPort("control: {socket_mode: \"999\"}\n"),
                "4:24", "control.socket_mode", "octal"},
        BadCase{"syntax", "ports: [\n  - name: p0\n", "2:3", "(syntax)",
                "illegal"},
        BadCase{"duplicate_key",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    mtu: 1500\n    mtu: 1400\n",
                "5:5", "ports[0].mtu", "duplicate key"},
        BadCase{"managed_eal_arg", WithPort("eal:\n  args: [--no-huge]\n"),
                "5:10", "eal.args[0]", "eal.lcore(s)/hugepages"},
        BadCase{"lcores_range", WithPort("eal:\n  lcores: 0\n"), "5:11",
                "eal.lcores", "out of range [1, 16]"},
        BadCase{"lcores_two_ports",
                "eal:\n  lcores: 2\nports:\n  - name: p0\n"
                "    devargs: net_null0\n  - name: p1\n"
                "    devargs: net_null1\n",
                "4:3", "ports", "eal.lcores above 1 takes a single port"},
        BadCase{"bad_pkey",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    pkeys: [0x8000]\n",
                "4:13", "ports[0].pkeys[0]", "P_Key"},
        BadCase{"bad_bool", WithPort("capture: {enabled: maybe}\n"), "4:20",
                "capture.enabled", "true or false"},
        BadCase{"section_not_map", WithPort("dcqcn: 3\n"), "4:8", "dcqcn",
                "expected a mapping"},
        BadCase{"dcqcn_range", WithPort("dcqcn: {rp_dce_tcp_g: 1024}\n"),
                "4:23", "dcqcn.rp_dce_tcp_g", "out of range [0, 1023]"},
        BadCase{"verbs_unknown_key", WithPort("verbs: {sockt: /x.sock}\n"),
                "4:9", "verbs.sockt", "unknown key"},
        BadCase{"verbs_bad_mode", WithPort("verbs: {socket_mode: \"0680\"}\n"),
                "4:22", "verbs.socket_mode", "octal"},
        BadCase{"verbs_long_socket",
                WithPort("verbs: {socket: /" + std::string(110, 'a') + "}\n"),
                "4:17", "verbs.socket", "1-107 characters"},
        BadCase{"verbs_bad_uid", WithPort("verbs: {allowed_uids: [0, -3]}\n"),
                "4:27", "verbs.allowed_uids[1]", "numeric uid"},
        BadCase{"verbs_uid_not_list", WithPort("verbs: {allowed_uids: 1000}\n"),
                "4:23", "verbs.allowed_uids", "expected a list"},
        BadCase{"verbs_budget_zero", WithPort("verbs: {post_budget: 0}\n"),
                "4:22", "verbs.post_budget", "out of range [1, 4096]"},
        BadCase{"verbs_enabled_type", WithPort("verbs: {enabled: yes}\n"),
                "4:18", "verbs.enabled", "true or false"},
        BadCase{"verbs_limits_typo",
                WithPort("verbs:\n  limits:\n    per_uid: {max_qp: 4}\n"),
                "6:15", "verbs.limits.per_uid.max_qp", "unknown key"},
        BadCase{"verbs_limits_negative",
                WithPort("verbs: {limits: {per_uid: {max_mrs: -1}}}\n"), "4:37",
                "verbs.limits.per_uid.max_mrs", "an integer"},
        BadCase{"verbs_limits_memlock_type",
                WithPort("verbs: {limits: {memlock: sometimes}}\n"), "4:27",
                "verbs.limits.memlock", "true or false"},
        BadCase{"verbs_socket_is_control_socket",
                WithPort("control: {socket: /tmp/r.sock}\n"
                         "verbs: {socket: /tmp/r.sock}\n"),
                "5:17", "verbs.socket", "already used"},
        BadCase{"port_verbs_socket_duplicate",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "  - name: p1\n    devargs: net_null1\n"
                "    verbs_socket: /run/rocemu/verbs.sock\n",
                "6:19", "ports[1].verbs_socket", "already used"},
        BadCase{"port_verbs_socket_empty",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    verbs_socket: \"\"\n",
                "4:19", "ports[0].verbs_socket", "1-107 characters"},
        BadCase{"ipv6_small_mtu",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    mtu: 1000\n    addresses: [fd77::2/64]\n",
                "4:10", "ports[0].mtu", "at least 1280"},
        // A netdev port takes what it can from its interface.
        BadCase{"netdev_and_devargs",
                "ports:\n  - netdev: eth0\n    devargs: net_null0\n", "3:14",
                "ports[0].devargs", "devargs or netdev"},
        BadCase{"netdev_addresses",
                "ports:\n  - netdev: eth0\n    addresses: [10.0.0.1/24]\n",
                "3:16", "ports[0].addresses", "follows its interface"},
        BadCase{"netdev_mtu", "ports:\n  - netdev: eth0\n    mtu: 9000\n",
                "3:10", "ports[0].mtu", "follows its interface's mtu"},
        BadCase{"netdev_vlan", "ports:\n  - netdev: eth0\n    vlan_id: 100\n",
                "3:14", "ports[0].vlan_id", "VLAN interface"},
        BadCase{"netdev_name", "ports:\n  - netdev: \"eth 0\"\n", "2:13",
                "ports[0].netdev", "interface name"},
        BadCase{"netdev_mode_value",
                "ports:\n  - netdev: eth0\n    netdev_mode: xdp\n", "3:18",
                "ports[0].netdev_mode", "af_xdp"},
        BadCase{"netdev_mode_without_netdev",
                "ports:\n  - name: p0\n    devargs: net_null0\n"
                "    netdev_mode: af_xdp\n",
                "4:18", "ports[0].netdev_mode", "only for a netdev port"},
        BadCase{"netdev_twice",
                "ports:\n  - netdev: eth0\n  - name: q\n    netdev: eth0\n",
                "4:13", "ports[1].netdev", "duplicate interface"},
        BadCase{"netdev_lcores", "eal: {lcores: 2}\nports:\n  - netdev: eth0\n",
                "3:13", "ports[0].netdev", "eal.lcores 1"}),
    [](const ::testing::TestParamInfo<BadCase>& info) {
      return std::string(info.param.name);
    });

TEST(ConfigTest, DefaultsApplyWhenKeysAreAbsent) {
  absl::StatusOr<Config> cfg = LoadConfigString(kPort, "min.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ASSERT_EQ(cfg->ports.size(), 1u);
  const PortConfig& p = cfg->ports[0];
  EXPECT_EQ(p.mtu, 1500u);
  EXPECT_EQ(p.pkeys, std::vector<uint16_t>{0xFFFF});
  EXPECT_EQ(p.traffic_class.roce_dscp, 26);
  EXPECT_EQ(p.traffic_class.roce_prio, 3);
  EXPECT_EQ(p.traffic_class.cnp_dscp, 48);
  EXPECT_EQ(p.traffic_class.cnp_prio, 6);
  EXPECT_FALSE(p.faults.enabled());
  EXPECT_EQ(p.link_speed_mbps, 100000u);
  EXPECT_FALSE(p.vlan_id.has_value());  // untagged
  EXPECT_FALSE(p.congestion_point.enabled);
  EXPECT_EQ(cfg->dcqcn.rp_dce_tcp_g, 1019u);
  EXPECT_EQ(cfg->dcqcn.rp_time_reset, 300u);
  EXPECT_EQ(cfg->control.socket_mode, 0660u);
  EXPECT_EQ(cfg->eal.hugepages, Hugepages::kAuto);
  EXPECT_EQ(cfg->eal.idle_sleep_us, 50u);
  EXPECT_EQ(cfg->eal.idle_spin_us, 50u);
  EXPECT_TRUE(cfg->eal.idle_yield);
  EXPECT_EQ(cfg->eal.memory_mb, 256u);
  EXPECT_TRUE(cfg->pfc.enabled[3]);
  EXPECT_FALSE(cfg->pfc.enabled[0]);
}

TEST(ConfigTest, ParsesEveryPortField) {
  absl::StatusOr<Config> cfg = LoadConfigString(R"(
ports:
  - name: v0
    devargs: net_af_packet0,iface=veth0
    mac: "02:00:00:00:00:0a"
    mtu: 4200
    addresses: [10.77.0.2/24, "fd77::2/64"]
    pkeys: [0xFFFF, 0x8001]
    neighbours:
      - {ip: 10.77.0.1, mac: "02:00:00:00:00:01"}
    traffic_class: {roce_dscp: 24, ecn: ect1}
    faults: {drop: 0.01, seed: 42, tx: true}
    link_speed_mbps: 25000
    vlan_id: 100
    congestion_point: {enabled: true, rate_mbps: 2000, buffer_bytes: 524288}
pfc: {priorities: [3, 4]}
eal: {idle_sleep_us: 0, idle_spin_us: 30, idle_yield: false, lcore: 1}
control: {socket_mode: "0600", prometheus_port: 9100}
logging: {level: debug}
)",
                                                "full.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  const PortConfig& p = cfg->ports[0];
  ASSERT_TRUE(p.mac.has_value());
  EXPECT_EQ(FormatMac(*p.mac), "02:00:00:00:00:0a");
  ASSERT_EQ(p.addresses.size(), 2u);
  EXPECT_FALSE(p.addresses[0].ipv6);
  EXPECT_EQ(p.addresses[0].prefix_len, 24);
  EXPECT_EQ(FormatIp(p.addresses[0].addr, false), "10.77.0.2");
  EXPECT_TRUE(p.addresses[1].ipv6);
  EXPECT_EQ(FormatIp(p.addresses[1].addr, true), "fd77::2");
  // The IPv4 GID is the IPv4-mapped IPv6 address.
  std::vector<IpAddr> gids = p.Gids();
  ASSERT_EQ(gids.size(), 2u);
  EXPECT_EQ(gids[0][10], 0xff);
  EXPECT_EQ(gids[0][11], 0xff);
  EXPECT_EQ(gids[0][12], 10);
  EXPECT_EQ(gids[0][15], 2);
  EXPECT_EQ(p.pkeys, (std::vector<uint16_t>{0xFFFF, 0x8001}));
  ASSERT_EQ(p.neighbours.size(), 1u);
  EXPECT_EQ(p.neighbours[0].mac[5], 1);
  EXPECT_EQ(p.traffic_class.roce_dscp, 24);
  EXPECT_EQ(p.traffic_class.ecn, EcnMode::kEct1);
  EXPECT_DOUBLE_EQ(p.faults.drop, 0.01);
  EXPECT_EQ(p.faults.seed, 42u);
  EXPECT_TRUE(p.faults.tx);
  EXPECT_EQ(p.link_speed_mbps, 25000u);
  EXPECT_EQ(p.vlan_id, std::optional<uint16_t>(100));
  EXPECT_TRUE(p.congestion_point.enabled);
  EXPECT_EQ(p.congestion_point.rate_mbps, 2000u);
  EXPECT_EQ(p.congestion_point.buffer_bytes, 524288u);
  EXPECT_TRUE(p.congestion_point.pfc);  // the default
  EXPECT_TRUE(cfg->pfc.enabled[4]);
  EXPECT_EQ(cfg->eal.idle_sleep_us, 0u);
  EXPECT_EQ(cfg->eal.idle_spin_us, 30u);
  EXPECT_FALSE(cfg->eal.idle_yield);
  EXPECT_EQ(cfg->eal.lcore, 1u);
  EXPECT_EQ(cfg->control.socket_mode, 0600u);
  EXPECT_EQ(cfg->control.prometheus_port, 9100);
  EXPECT_EQ(cfg->logging.level, LogLevel::kDebug);
}

TEST(ConfigTest, VerbsDefaultsGiveOnlyTheFirstPortASocket) {
  absl::StatusOr<Config> cfg = LoadConfigString(
      "ports:\n  - {name: p0, devargs: net_null0}\n"
      "  - {name: p1, devargs: net_null1}\n",
      "two.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_TRUE(cfg->verbs.enabled);
  EXPECT_EQ(cfg->verbs.socket_mode, 0660u);
  EXPECT_TRUE(cfg->verbs.allowed_uids.empty());
  EXPECT_EQ(cfg->verbs.post_budget, 64u);
  EXPECT_TRUE(cfg->verbs.limits.memlock);
  EXPECT_EQ(cfg->verbs.limits.per_uid.max_qps, 0u);
  EXPECT_EQ(cfg->verbs.limits.per_uid.max_queue_bytes, 0u);
  EXPECT_EQ(cfg->VerbsSocketPath(0), "/run/rocemu/verbs.sock");
  EXPECT_EQ(cfg->VerbsSocketPath(1), "");
  EXPECT_EQ(cfg->VerbsSocketPath(2), "");
}

TEST(ConfigTest, ParsesVerbsSection) {
  absl::StatusOr<Config> cfg = LoadConfigString(R"(
ports:
  - name: p0
    devargs: net_null0
  - name: p1
    devargs: net_null1
    verbs_socket: /tmp/p1-verbs.sock
verbs:
  socket: /tmp/p0-verbs.sock
  socket_mode: "0600"
  allowed_uids: [0, 1000]
  post_budget: 16
  limits:
    memlock: false
    per_uid: {max_pds: 1, max_cqs: 2, max_qps: 3, max_mrs: 4,
              max_queue_bytes: 1048576}
)",
                                                "verbs.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_FALSE(cfg->verbs.limits.memlock);
  const config::VerbsUserCaps& caps = cfg->verbs.limits.per_uid;
  EXPECT_EQ(caps.max_pds, 1u);
  EXPECT_EQ(caps.max_cqs, 2u);
  EXPECT_EQ(caps.max_qps, 3u);
  EXPECT_EQ(caps.max_mrs, 4u);
  EXPECT_EQ(caps.max_queue_bytes, 1048576u);
  EXPECT_EQ(cfg->verbs.socket_mode, 0600u);
  EXPECT_EQ(cfg->verbs.allowed_uids, (std::vector<uint32_t>{0, 1000}));
  EXPECT_EQ(cfg->verbs.post_budget, 16u);
  EXPECT_EQ(cfg->VerbsSocketPath(0), "/tmp/p0-verbs.sock");
  EXPECT_EQ(cfg->VerbsSocketPath(1), "/tmp/p1-verbs.sock");
}

TEST(ConfigTest, PortVerbsSocketOverridesTheSectionsAndDisablingWins) {
  absl::StatusOr<Config> cfg = LoadConfigString(R"(
ports:
  - {name: p0, devargs: net_null0, verbs_socket: /tmp/own.sock}
verbs: {enabled: false}
)",
                                                "off.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_FALSE(cfg->verbs.enabled);
  EXPECT_EQ(cfg->VerbsSocketPath(0), "");
  cfg->verbs.enabled = true;
  EXPECT_EQ(cfg->VerbsSocketPath(0), "/tmp/own.sock");
}

// The error quotes the file's text; a control character in it (here a
// backslash then byte 0x01 in a double-quoted scalar, which yaml-cpp
// reports as an unknown escape, quoting the byte) is escaped so the error
// stays one line (the config fuzzer found the raw one).
TEST(ConfigTest, ErrorsStayOneLineWhateverTheTextHolds) {
  absl::StatusOr<Config> c = LoadConfigString(
      "eal: \"a\\\x01"
      "b\"\n",
      "t.yaml");
  ASSERT_FALSE(c.ok());
  const std::string m(c.status().message());
  EXPECT_EQ(m.find('\x01'), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
  EXPECT_NE(m.find("unknown escape character: \\x01"), std::string::npos) << m;
  EXPECT_EQ(m.rfind("t.yaml:1:", 0), 0u) << m;
}

TEST(ConfigTest, MissingFileIsAnError) {
  absl::StatusOr<Config> cfg = LoadConfigFile("/nonexistent/rocemu.yaml");
  ASSERT_FALSE(cfg.ok());
  EXPECT_THAT(std::string(cfg.status().message()),
              HasSubstr("/nonexistent/rocemu.yaml"));
}

TEST(ConfigTest, NetdevPortIsNamedAfterItsInterface) {
  absl::StatusOr<Config> cfg = LoadConfigString(
      "ports:\n  - netdev: eth0\n  - netdev: eth1\n    name: fast\n"
      "    netdev_mode: af_packet\n",
      "netdev.yaml");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ASSERT_EQ(cfg->ports.size(), 2u);
  EXPECT_EQ(cfg->ports[0].name, "eth0");
  EXPECT_EQ(cfg->ports[0].netdev, "eth0");
  EXPECT_EQ(cfg->ports[0].netdev_mode, NetdevMode::kAuto);
  EXPECT_TRUE(cfg->ports[0].devargs.empty());
  EXPECT_TRUE(cfg->ports[0].addresses.empty());
  EXPECT_EQ(cfg->ports[1].name, "fast");
  EXPECT_EQ(cfg->ports[1].netdev_mode, NetdevMode::kAfPacket);
}

TEST(ConfigTest, NetdevFlagNeedsNoFile) {
  absl::StatusOr<Config> cfg = NetdevConfig("eth0", "/run/rocemu/");
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  ASSERT_EQ(cfg->ports.size(), 1u);
  EXPECT_EQ(cfg->ports[0].name, "eth0");  // device rocemu_eth0
  EXPECT_EQ(cfg->ports[0].netdev, "eth0");
  EXPECT_EQ(cfg->control.socket_path, "/run/rocemu/rocemud-eth0.sock");
  EXPECT_EQ(cfg->VerbsSocketPath(0), "/run/rocemu/verbs-eth0.sock");
  EXPECT_EQ(cfg->eal.lcores, 1u);
  EXPECT_FALSE(NetdevConfig("eth0/x", "/run/rocemu").ok());
  EXPECT_FALSE(NetdevConfig("", "/run/rocemu").ok());
  EXPECT_FALSE(NetdevConfig("eth0", std::string(100, 'd')).ok());
}

class ShippedConfigTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ShippedConfigTest, Loads) {
  std::string path = std::string(ROCEMU_SOURCE_DIR) + "/" + GetParam();
  absl::StatusOr<Config> cfg = LoadConfigFile(path);
  ASSERT_TRUE(cfg.ok()) << cfg.status();
  EXPECT_FALSE(cfg->ports.empty());
}

INSTANTIATE_TEST_SUITE_P(All, ShippedConfigTest,
                         ::testing::Values("config/rocemu.yaml",
                                           "config/examples/tap.yaml",
                                           "config/examples/veth.yaml",
                                           "config/examples/memif-pair-a.yaml",
                                           "config/examples/memif-pair-b.yaml",
                                           "config/examples/pcap-replay.yaml",
                                           "config/examples/netdev.yaml"));

}  // namespace
}  // namespace rocemu::config
