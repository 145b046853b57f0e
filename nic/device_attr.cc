#include "nic/device_attr.h"

#include "absl/strings/str_format.h"

namespace rocemu::nic {

uint64_t GuidFromMac(const protocol::MacAddr& m) {
  return (static_cast<uint64_t>(m[0] ^ 2) << 56) |
         (static_cast<uint64_t>(m[1]) << 48) |
         (static_cast<uint64_t>(m[2]) << 40) | (uint64_t{0xFF} << 32) |
         (uint64_t{0xFE} << 24) | (static_cast<uint64_t>(m[3]) << 16) |
         (static_cast<uint64_t>(m[4]) << 8) | m[5];
}

namespace {
// Bytes of a RoCEv2 packet around the payload that must fit the link MTU:
// IP header, UDP, BTH, the largest extension header set (AtomicETH, 28
// bytes) and the ICRC.
constexpr uint32_t kUdpBthIcrc = 8 + 12 + 28 + 4;
constexpr uint32_t kIpv4Header = 20;
constexpr uint32_t kIpv6Header = 40;
}  // namespace

std::optional<Mtu> MtuFromBytes(uint32_t bytes) {
  for (Mtu m : {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048, Mtu::k4096}) {
    if (MtuToBytes(m) == bytes) return m;
  }
  return std::nullopt;
}

std::optional<Mtu> MtuForLinkMtu(uint32_t link_mtu, bool ipv6) {
  const uint32_t overhead = kUdpBthIcrc + (ipv6 ? kIpv6Header : kIpv4Header);
  if (link_mtu < overhead) return std::nullopt;
  const uint32_t room = link_mtu - overhead;
  std::optional<Mtu> best;
  for (Mtu m : {Mtu::k256, Mtu::k512, Mtu::k1024, Mtu::k2048, Mtu::k4096}) {
    if (MtuToBytes(m) <= room) best = m;
  }
  return best;
}

const char* MtuName(Mtu m) {
  switch (m) {
    case Mtu::k256:
      return "IBV_MTU_256";
    case Mtu::k512:
      return "IBV_MTU_512";
    case Mtu::k1024:
      return "IBV_MTU_1024";
    case Mtu::k2048:
      return "IBV_MTU_2048";
    case Mtu::k4096:
      return "IBV_MTU_4096";
  }
  return "IBV_MTU_INVALID";
}

const char* PortStateName(PortState s) {
  switch (s) {
    case PortState::kNop:
      return "IBV_PORT_NOP";
    case PortState::kDown:
      return "IBV_PORT_DOWN";
    case PortState::kInit:
      return "IBV_PORT_INIT";
    case PortState::kArmed:
      return "IBV_PORT_ARMED";
    case PortState::kActive:
      return "IBV_PORT_ACTIVE";
    case PortState::kActiveDefer:
      return "IBV_PORT_ACTIVE_DEFER";
  }
  return "IBV_PORT_INVALID";
}

absl::Status DeviceAttr::Validate() const {
  if (max_sge == 0 || max_sge > kMaxSge || max_sge_rd > kMaxSge ||
      max_srq_sge > kMaxSge) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_sge/max_sge_rd/max_srq_sge must be in [1, %u]", kMaxSge));
  }
  if (max_inline_data > kMaxInlineData) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_inline_data %u above the %u bytes a work request holds",
        max_inline_data, kMaxInlineData));
  }
  if (max_msg_sz == 0 || max_msg_sz > (1u << 31)) {
    return absl::InvalidArgumentError(
        "max_msg_sz must be in [1, 2^31] (the RETH DMA length limit)");
  }
  if (max_qp == 0 || max_qp_wr == 0 || max_cq == 0 || max_cqe == 0 ||
      max_mr == 0 || max_pd == 0) {
    return absl::InvalidArgumentError(
        "max_qp, max_qp_wr, max_cq, max_cqe, max_mr and max_pd must be > 0");
  }
  // Keys and handles carry the index in 24 bits.
  constexpr uint32_t kMaxIndex = 1u << 24;
  if (max_mr >= kMaxIndex || max_pd >= kMaxIndex || max_cq >= kMaxIndex ||
      max_srq >= kMaxIndex || max_ah >= kMaxIndex || max_qp >= kMaxIndex) {
    return absl::InvalidArgumentError("object counts must be below 2^24");
  }
  if (max_qp_rd_atom > 255 || max_qp_init_rd_atom > 255) {
    return absl::InvalidArgumentError(
        "max_qp_rd_atom and max_qp_init_rd_atom are 8-bit QP attributes");
  }
  if (max_pkeys == 0 || max_pkeys > 0xFFFF) {
    return absl::InvalidArgumentError("max_pkeys must be in [1, 65535]");
  }
  return absl::OkStatus();
}

absl::Status PortAttr::Validate() const {
  if (static_cast<uint8_t>(active_mtu) > static_cast<uint8_t>(max_mtu)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("active_mtu %s above max_mtu %s", MtuName(active_mtu),
                        MtuName(max_mtu)));
  }
  if (!MtuFromBytes(MtuToBytes(max_mtu)) ||
      !MtuFromBytes(MtuToBytes(active_mtu))) {
    return absl::InvalidArgumentError("MTU outside IBV_MTU_256..4096");
  }
  if (gid_tbl_len <= 0 || pkey_tbl_len == 0) {
    return absl::InvalidArgumentError(
        "gid_tbl_len and pkey_tbl_len must be > 0");
  }
  if (max_msg_sz == 0 || max_msg_sz > (1u << 31)) {
    return absl::InvalidArgumentError("max_msg_sz must be in [1, 2^31]");
  }
  return absl::OkStatus();
}

}  // namespace rocemu::nic
