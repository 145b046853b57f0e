// Flow steering (ibv_create_flow): the rules that place received Ethernet
// frames whole into raw packet QPs, as a ConnectX's NIC receive flow tables
// do for its raw QPs.
//
// A rule is a value and a mask over a fixed key (FlowKey: the L2..L4 fields
// ibv_flow_spec_eth/ipv4/ipv6/tcp_udp name, in network order) plus the
// layers the frame must have (an IPv4 spec matches IPv4 frames only, even
// with an all-zero mask). One frame's key is extracted once and compared
// with each rule by eight masked 64-bit words: no allocation, no hash. The
// table is only consulted for frames that are not the RNIC's own (RoCEv2,
// PFC/PAUSE): rocemu never lets a rule steal the RoCE engines' traffic.
//
// Precedence, as ibv_create_flow(3) documents it: NORMAL rules in order of
// priority (lower value first; equal priorities in order of creation), the
// first that matches takes the frame; a frame no NORMAL rule took goes to
// an MC_DEFAULT rule if its destination is a group address, else to an
// ALL_DEFAULT rule. SNIFFER rules take a copy of every frame the table sees
// whatever else took it.
#ifndef ROCEMU_NIC_FLOW_TABLE_H_
#define ROCEMU_NIC_FLOW_TABLE_H_

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "protocol/headers.h"

namespace rocemu::nic {

// Byte offsets of the fields in FlowKey::bytes (network byte order).
namespace flow_key {
inline constexpr uint32_t kDstMac = 0;      // 6
inline constexpr uint32_t kSrcMac = 6;      // 6
inline constexpr uint32_t kEtherType = 12;  // 2, after any 802.1Q tag
inline constexpr uint32_t kVlanTag = 14;    // 2, the TCI (PCP, DEI, VID)
inline constexpr uint32_t kSrcIp = 16;      // 16 (IPv4: the first 4)
inline constexpr uint32_t kDstIp = 32;      // 16 (IPv4: the first 4)
inline constexpr uint32_t kIpProto = 48;    // IPv4 protocol, IPv6 next header
inline constexpr uint32_t kTos = 49;        // IPv4 TOS, IPv6 traffic class
inline constexpr uint32_t kTtl = 50;        // IPv4 TTL, IPv6 hop limit
inline constexpr uint32_t kIpFlags = 51;    // IPv4 flags (3 bits)
inline constexpr uint32_t kFlowLabel = 52;  // 4: IPv6 flow label (20 bits)
inline constexpr uint32_t kSrcPort = 56;    // 2: TCP/UDP
inline constexpr uint32_t kDstPort = 58;    // 2: TCP/UDP
inline constexpr uint32_t kLen = 64;
}  // namespace flow_key

// Layers a frame has (FlowKey::layers) and a rule requires.
namespace flow_layer {
inline constexpr uint8_t kEth = 1 << 0;
inline constexpr uint8_t kVlan = 1 << 1;
inline constexpr uint8_t kIpv4 = 1 << 2;
inline constexpr uint8_t kIpv6 = 1 << 3;
inline constexpr uint8_t kTcp = 1 << 4;
inline constexpr uint8_t kUdp = 1 << 5;
}  // namespace flow_layer

inline constexpr size_t kFlowKeyWords = flow_key::kLen / 8;

struct FlowKey {
  alignas(8) std::array<uint8_t, flow_key::kLen> bytes{};
  uint8_t layers = 0;
};

// The key of a frame: false for one too short to hold an Ethernet header.
// Truncated L3/L4 headers leave those layers out.
bool ExtractFlowKey(std::span<const uint8_t> frame, FlowKey* key);

// A UDP datagram to the RoCEv2 port: never a rule's.
inline bool IsRoceV2Key(const FlowKey& k) {
  return (k.layers & flow_layer::kUdp) != 0 &&
         k.bytes[flow_key::kDstPort] == (protocol::kRoceV2UdpPort >> 8) &&
         k.bytes[flow_key::kDstPort + 1] == (protocol::kRoceV2UdpPort & 0xFF);
}

// ibv_flow_attr_type.
enum class FlowType : uint8_t {
  kNormal = 0,
  kAllDefault = 1,
  kMcDefault = 2,
  kSniffer = 3,
};

struct FlowRule {
  FlowType type = FlowType::kNormal;
  uint16_t priority = 0;  // lower first (NORMAL rules)
  uint32_t qpn = 0;       // the raw packet QP the frames go to
  uint8_t layers = 0;     // flow_layer bits the frame must have
  FlowKey value;          // compared under mask
  FlowKey mask;
};

class FlowTable {
 public:
  explicit FlowTable(uint32_t max_rules) : max_rules_(max_rules) {}

  // The rule's handle (never 0). InvalidArgument for a value with bits
  // outside its mask (as the kernel refuses a spec whose value is not
  // covered by its mask) or for an unknown type; ResourceExhausted beyond
  // max_rules.
  absl::StatusOr<uint32_t> Add(const FlowRule& rule);
  absl::Status Remove(uint32_t handle);
  // Rules steering to `qpn` (ibv_destroy_qp is busy while there are any).
  size_t RulesOf(uint32_t qpn) const;
  bool empty() const { return rules_.empty(); }
  size_t size() const { return rules_.size(); }

  // Calls take(qpn, rule_handle) for each QP the frame goes to: the first
  // matching NORMAL rule (else the matching default rule), then every
  // matching SNIFFER rule. Returns how many QPs took it.
  template <typename F>
  size_t Steer(const FlowKey& key, F&& take) const {
    size_t n = 0;
    const bool group = (key.bytes[flow_key::kDstMac] & 1) != 0;
    const Entry* fallback = nullptr;
    bool taken = false;
    for (const Entry& e : rules_) {
      if (e.rule.type == FlowType::kSniffer) {
        if (Matches(e.rule, key)) take(e.rule.qpn, e.handle), ++n;
        continue;
      }
      if (taken) continue;
      if (e.rule.type == FlowType::kNormal) {
        if (Matches(e.rule, key)) {
          take(e.rule.qpn, e.handle), ++n;
          taken = true;
        }
      } else if (fallback == nullptr &&
                 (e.rule.type == FlowType::kAllDefault ||
                  (group && e.rule.type == FlowType::kMcDefault))) {
        fallback = &e;
      }
    }
    if (!taken && fallback != nullptr) {
      take(fallback->rule.qpn, fallback->handle), ++n;
    }
    return n;
  }

  static bool Matches(const FlowRule& r, const FlowKey& key) {
    if ((key.layers & r.layers) != r.layers) return false;
    uint64_t diff = 0;
    for (size_t i = 0; i < kFlowKeyWords; ++i) {
      diff |= (Word(key, i) ^ Word(r.value, i)) & Word(r.mask, i);
    }
    return diff == 0;
  }

 private:
  struct Entry {
    uint32_t handle;
    FlowRule rule;
  };
  static uint64_t Word(const FlowKey& k, size_t i) {
    uint64_t w;
    __builtin_memcpy(&w, k.bytes.data() + 8 * i, 8);
    return w;
  }

  uint32_t max_rules_;
  uint32_t next_handle_ = 1;
  // NORMAL rules sorted by priority, then creation; default and sniffer
  // rules after them in creation order.
  std::vector<Entry> rules_;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_FLOW_TABLE_H_
