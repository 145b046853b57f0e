// Device and port attributes as ibv_query_device / ibv_query_port report
// them. The defaults are at least as generous as Linux rxe's (rxe_param.h);
// the daemon may lower them from its configuration, and the resource tables
// enforce them at creation time.
#ifndef ROCEMU_NIC_DEVICE_ATTR_H_
#define ROCEMU_NIC_DEVICE_ATTR_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "nic/work_request.h"
#include "protocol/frame.h"

namespace rocemu::nic {

// ibv_mtu, same values.
enum class Mtu : uint8_t {
  k256 = 1,
  k512 = 2,
  k1024 = 3,
  k2048 = 4,
  k4096 = 5,
};
constexpr uint32_t MtuToBytes(Mtu m) { return 128u << static_cast<uint8_t>(m); }
// Exact conversion: only 256, 512, 1024, 2048 and 4096 are IB MTUs.
std::optional<Mtu> MtuFromBytes(uint32_t bytes);
// Largest IB MTU whose RoCEv2 frame fits an Ethernet link of `link_mtu`
// bytes of IP payload (what rxe derives from the netdev MTU); nullopt when
// even 256 does not fit.
std::optional<Mtu> MtuForLinkMtu(uint32_t link_mtu, bool ipv6);
const char* MtuName(Mtu m);  // "IBV_MTU_1024"

// ibv_atomic_cap.
enum class AtomicCap : uint8_t { kNone = 0, kHca = 1, kGlob = 2 };

// ibv_port_state.
enum class PortState : uint8_t {
  kNop = 0,
  kDown = 1,
  kInit = 2,
  kArmed = 3,
  kActive = 4,
  kActiveDefer = 5,
};
const char* PortStateName(PortState s);

// The modified EUI-64 of a MAC: the node GUID rxe and ConnectX derive from
// the port's address.
uint64_t GuidFromMac(const protocol::MacAddr& mac);

// ibv_device_attr (the fields meaningful for a RoCE device).
// ibv_tm_caps (IBV_TM_CAP_RC): what a tag-matching SRQ may hold. One SGE
// per tagged buffer and a 64-byte rendezvous header, as ConnectX-5 reports;
// the list is scanned per tagged message, so it is kept short.
struct TmCaps {
  uint32_t max_rndv_hdr_size = 64;
  uint32_t max_num_tags = 64;
  uint32_t max_ops = 32;
  uint32_t max_sge = 1;
};

struct DeviceAttr {
  std::string fw_ver = "0.1.0";
  uint64_t node_guid = 0;
  uint64_t sys_image_guid = 0;
  uint64_t max_mr_size = ~uint64_t{0};
  uint64_t page_size_cap = 0xFFFFF000u;
  uint32_t vendor_id = 0xFFFFFF;  // as rxe: no IEEE OUI of our own
  uint32_t vendor_part_id = 0;
  uint32_t hw_ver = 0;
  uint32_t max_qp = 1u << 17;
  uint32_t max_qp_wr = 1u << 15;
  // IBV_DEVICE_* bits: P_Key and Q_Key violations are counted
  // (BAD_PKEY_CNTR 1<<1, BAD_QKEY_CNTR 1<<2), the system image GUID is
  // given (SYS_IMAGE_GUID 1<<11), RC responders send RNR NAKs
  // (RC_RNR_NAK_GEN 1<<12), memory windows (MEM_WINDOW 1<<17) of type 1
  // and type 2B (MEM_WINDOW_TYPE_2B 1<<24: bound to a QP, as rxe), XRC
  // (XRC 1<<20: XRC domains, SRQs and INI/TGT QPs, annex A14), flow
  // steering rules for raw packet QPs (MANAGED_FLOW_STEERING 1<<29, as a
  // ConnectX). Not RAW_IP_CSUM: a raw QP's frames leave as they are.
  uint32_t device_cap_flags = (1u << 1) | (1u << 2) | (1u << 11) | (1u << 12) |
                              (1u << 17) | (1u << 20) | (1u << 24) | (1u << 29);
  // The 64-bit IB_UVERBS_DEVICE_* bits above 31 (ibv_device_attr_ex's
  // device_cap_flags_ex): IBTA 1.5 RDMA FLUSH with global placement
  // (FLUSH_GLOBAL 1<<38; not FLUSH_PERSISTENT 1<<39: no region is
  // persistent memory) and RDMA ATOMIC WRITE (ATOMIC_WRITE 1<<40).
  static constexpr uint64_t kDeviceCapFlagsEx = (1ull << 38) | (1ull << 40);
  uint32_t max_sge = kMaxSge;
  uint32_t max_sge_rd = kMaxSge;
  uint32_t max_cq = 1u << 17;
  uint32_t max_cqe = 1u << 20;  // the largest completion ring (verbs/shm_ring)
  uint32_t max_mr = 1u << 20;
  uint32_t max_pd = 1u << 17;
  uint32_t max_qp_rd_atom = 128;
  uint32_t max_ee_rd_atom = 0;
  uint32_t max_res_rd_atom = 128u << 17;
  uint32_t max_qp_init_rd_atom = 128;
  uint32_t max_ee_init_rd_atom = 0;
  AtomicCap atomic_cap = AtomicCap::kHca;
  uint32_t max_ee = 0;
  uint32_t max_rdd = 0;
  uint32_t max_mw = 1u << 20;  // windows share the region table (max_mr)
  uint32_t max_raw_ipv6_qp = 0;
  uint32_t max_raw_ethy_qp = 0;
  // rxe's limits (RXE_MAX_MCAST_GRP, _QP_ATTACH, _TOT_MCAST_QP_ATTACH).
  uint32_t max_mcast_grp = 8192;
  uint32_t max_mcast_qp_attach = 56;
  uint32_t max_total_mcast_qp_attach = 0x70000;
  uint32_t max_ah = 1u << 20;
  uint32_t max_fmr = 0;
  uint32_t max_map_per_fmr = 0;
  uint32_t max_srq = 1u << 17;
  uint32_t max_srq_wr = 1u << 15;
  uint32_t max_srq_sge = kMaxSge;
  TmCaps tm_caps;
  // XRC domains the device holds (no ibv_device_attr field reports it).
  uint32_t max_xrcds = 1u << 16;
  uint32_t max_pkeys = 64;
  uint8_t local_ca_ack_delay = 15;
  uint8_t phys_port_cnt = 1;
  // Not in ibv_device_attr proper but reported by ibv_query_qp caps / the
  // extended query: the inline limit and the largest message.
  uint32_t max_inline_data = kMaxInlineData;
  uint32_t max_msg_sz = 1u << 31;
  // Flow steering rules (ibv_create_flow) the device holds at once.
  uint32_t max_flow_rules = 1024;

  // Rejects limits this implementation cannot honour (more SGEs or inline
  // bytes than a work request holds, a message above 2^31, ...).
  absl::Status Validate() const;
};

// The RNIC's one port, as ibv_port_attr and async events number it.
inline constexpr uint32_t kPortNumber = 1;
// ibv_port_attr.phys_state values (IB spec PortPhysicalState).
inline constexpr uint8_t kPhysDisabled = 3;
inline constexpr uint8_t kPhysLinkUp = 5;

// ibv_port_attr (RoCE: no LIDs, no SM).
struct PortAttr {
  PortState state = PortState::kActive;
  Mtu max_mtu = Mtu::k4096;
  Mtu active_mtu = Mtu::k1024;
  int32_t gid_tbl_len = 1024;
  uint32_t port_cap_flags = 0;
  uint32_t max_msg_sz = 1u << 31;
  uint32_t bad_pkey_cntr = 0;   // mirrored from DeviceCounters on query
  uint32_t qkey_viol_cntr = 0;  // idem
  uint16_t pkey_tbl_len = 64;
  uint16_t lid = 0;
  uint16_t sm_lid = 0;
  uint8_t lmc = 0;
  uint8_t max_vl_num = 1;
  uint8_t sm_sl = 0;
  uint8_t subnet_timeout = 0;
  uint8_t init_type_reply = 0;
  uint8_t active_width = 2;   // IB_WIDTH_4X
  uint8_t active_speed = 32;  // IB_SPEED_EDR (25 Gb/s per lane)
  uint8_t phys_state = kPhysLinkUp;
  uint8_t link_layer = 2;  // IBV_LINK_LAYER_ETHERNET

  absl::Status Validate() const;
};

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_DEVICE_ATTR_H_
