#include "nic/flow_table.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_format.h"

namespace rocemu::nic {

namespace {

constexpr uint16_t kEtherTypeVlan = 0x8100;
constexpr uint16_t kEtherTypeQinQ = 0x88A8;
constexpr uint16_t kEtherTypeIpv4 = 0x0800;
constexpr uint16_t kEtherTypeIpv6 = 0x86DD;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;

uint16_t Be16(const uint8_t* p) {
  return static_cast<uint16_t>(p[0] << 8 | p[1]);
}

// Where the rule's sort key puts it: NORMAL rules by priority, then the
// others (their order among themselves does not matter to Steer).
bool Before(const FlowRule& a, uint32_t ha, const FlowRule& b, uint32_t hb) {
  const bool na = a.type == FlowType::kNormal;
  const bool nb = b.type == FlowType::kNormal;
  if (na != nb) return na;
  if (na && a.priority != b.priority) return a.priority < b.priority;
  return ha < hb;
}

}  // namespace

bool ExtractFlowKey(std::span<const uint8_t> f, FlowKey* key) {
  key->bytes.fill(0);
  key->layers = 0;
  if (f.size() < 14) return false;
  uint8_t* k = key->bytes.data();
  std::memcpy(k + flow_key::kDstMac, f.data(), 12);  // both MACs
  key->layers = flow_layer::kEth;
  size_t off = 12;
  uint16_t type = Be16(f.data() + off);
  if (type == kEtherTypeVlan || type == kEtherTypeQinQ) {
    if (f.size() < off + 6) return true;
    std::memcpy(k + flow_key::kVlanTag, f.data() + off + 2, 2);
    key->layers |= flow_layer::kVlan;
    off += 4;
    type = Be16(f.data() + off);
  }
  std::memcpy(k + flow_key::kEtherType, f.data() + off, 2);
  off += 2;
  uint8_t proto = 0;
  if (type == kEtherTypeIpv4) {
    if (f.size() < off + 20) return true;
    const uint8_t* ip = f.data() + off;
    const size_t ihl = static_cast<size_t>(ip[0] & 0x0F) * 4;
    if ((ip[0] >> 4) != 4 || ihl < 20 || f.size() < off + ihl) return true;
    key->layers |= flow_layer::kIpv4;
    k[flow_key::kTos] = ip[1];
    k[flow_key::kIpFlags] = ip[6] >> 5;
    k[flow_key::kTtl] = ip[8];
    proto = ip[9];
    k[flow_key::kIpProto] = proto;
    std::memcpy(k + flow_key::kSrcIp, ip + 12, 4);
    std::memcpy(k + flow_key::kDstIp, ip + 16, 4);
    // Fragments after the first carry no L4 header.
    const uint16_t frag_off = Be16(ip + 6) & 0x1FFF;
    if (frag_off != 0) return true;
    off += ihl;
  } else if (type == kEtherTypeIpv6) {
    if (f.size() < off + 40) return true;
    const uint8_t* ip = f.data() + off;
    if ((ip[0] >> 4) != 6) return true;
    key->layers |= flow_layer::kIpv6;
    k[flow_key::kTos] = static_cast<uint8_t>((ip[0] << 4) | (ip[1] >> 4));
    k[flow_key::kFlowLabel + 1] = ip[1] & 0x0F;
    k[flow_key::kFlowLabel + 2] = ip[2];
    k[flow_key::kFlowLabel + 3] = ip[3];
    proto = ip[6];
    k[flow_key::kIpProto] = proto;
    k[flow_key::kTtl] = ip[7];
    std::memcpy(k + flow_key::kSrcIp, ip + 8, 16);
    std::memcpy(k + flow_key::kDstIp, ip + 24, 16);
    off += 40;
  } else {
    return true;
  }
  if ((proto == kProtoTcp || proto == kProtoUdp) && f.size() >= off + 4) {
    std::memcpy(k + flow_key::kSrcPort, f.data() + off, 4);  // both ports
    key->layers |= proto == kProtoTcp ? flow_layer::kTcp : flow_layer::kUdp;
  }
  return true;
}

absl::StatusOr<uint32_t> FlowTable::Add(const FlowRule& rule) {
  if (rule.type > FlowType::kSniffer) {
    return absl::InvalidArgumentError("unknown flow attribute type");
  }
  for (size_t i = 0; i < flow_key::kLen; ++i) {
    if ((rule.value.bytes[i] & ~rule.mask.bytes[i]) != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "flow spec value has bits outside its mask (key byte %d)", i));
    }
  }
  if (rules_.size() >= max_rules_) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("flow rule limit (%d) reached", max_rules_));
  }
  const uint32_t handle = next_handle_++;
  if (next_handle_ == 0) next_handle_ = 1;
  Entry e{handle, rule};
  auto at = std::find_if(rules_.begin(), rules_.end(), [&](const Entry& x) {
    return Before(e.rule, e.handle, x.rule, x.handle);
  });
  rules_.insert(at, e);
  return handle;
}

absl::Status FlowTable::Remove(uint32_t handle) {
  auto it = std::find_if(rules_.begin(), rules_.end(),
                         [&](const Entry& e) { return e.handle == handle; });
  if (it == rules_.end()) {
    return absl::NotFoundError(absl::StrFormat("no flow rule %u", handle));
  }
  rules_.erase(it);
  return absl::OkStatus();
}

size_t FlowTable::RulesOf(uint32_t qpn) const {
  return std::count_if(rules_.begin(), rules_.end(),
                       [&](const Entry& e) { return e.rule.qpn == qpn; });
}

}  // namespace rocemu::nic
