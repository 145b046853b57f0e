// The fixed layouts of the entries in the shared-memory rings: send queue
// (SqSlot), receive queue (RqSlot) and completion queue (CqeSlot), and
// their conversion to and from the RNIC's work requests and completions.
//
// The daemon copies each entry out of shared memory before looking at it
// (the application may change the slot at any time) and validates it on
// the copy: an entry with an impossible SGE count or inline length is
// refused, never trusted.
#ifndef ROCEMU_VERBS_WIRE_RING_SLOTS_H_
#define ROCEMU_VERBS_WIRE_RING_SLOTS_H_

#include <cstdint>

#include "nic/completion.h"
#include "nic/work_request.h"
#include "verbs/wire/wire_protocol.h"

namespace rocemu::verbs {

struct WireSge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

// IBV_WR_BIND_MW travels as: invalidate_rkey the window's current key,
// rkey its new key, remote_addr/compare_add the bound range, swap the
// window's access flags | type << 32, sge[0].lkey the region (num_sge 0).
// IBV_WR_ATOMIC_WRITE: remote_addr/rkey the target, swap the 8 bytes as
// they lie in memory (num_sge 0). IBV_WR_FLUSH: remote_addr/rkey,
// compare_add the length, swap the placement type | selectivity level << 8.
struct SqSlot {
  uint64_t wr_id;
  uint8_t opcode;  // IBV_WR_* value
  uint8_t num_sge;
  uint16_t reserved0;
  uint32_t send_flags;  // IBV_SEND_* bits
  uint32_t imm_data;    // host order of the wire ImmDt
  uint32_t invalidate_rkey;
  uint64_t remote_addr;  // RDMA and atomics
  uint32_t rkey;
  uint32_t inline_len;
  uint64_t compare_add;
  uint64_t swap;
  uint32_t ah;  // UD
  uint32_t remote_qpn;
  uint32_t remote_qkey;
  uint32_t remote_srqn;  // XRC INI: the XRC SRQ the request is for
  // SGEs, or the inline payload with IBV_SEND_INLINE.
  union {
    WireSge sge[nic::kMaxSge];
    uint8_t inline_data[nic::kMaxInlineData];
  };
};
static_assert(sizeof(SqSlot) == 72 + 512);

struct RqSlot {
  uint64_t wr_id;
  uint32_t num_sge;
  uint32_t reserved;
  WireSge sge[nic::kMaxSge];
};
static_assert(sizeof(RqSlot) == 16 + 512);

struct CqeSlot {
  uint64_t wr_id;
  uint8_t status;  // IBV_WC_* status
  uint8_t opcode;  // IBV_WC_* opcode
  uint16_t pkey_index;
  uint32_t vendor_err;
  uint32_t byte_len;
  uint32_t imm_data;
  uint32_t invalidated_rkey;
  uint32_t qp_num;
  uint32_t src_qp;
  uint32_t wc_flags;
  uint16_t slid;
  uint8_t sl;
  uint8_t dlid_path_bits;
  uint32_t flags;  // kCqeSkip
  // When the RNIC put the completion in the CQ, in CompletionClockNs()
  // nanoseconds; 0 unless the CQ was created with
  // kCreateCqWithTimestamps.
  uint64_t timestamp;
  // Tag matching (ibv_wc_read_tm_info): the TMH's tag and app_ctx.
  uint64_t tm_tag;
  uint32_t tm_priv;
  uint32_t reserved;
};
static_assert(sizeof(CqeSlot) == 72);

// The clock of completion timestamps (ibv_wc_read_completion_ts,
// ibv_query_rt_values_ex): CLOCK_MONOTONIC_RAW in nanoseconds, which the
// daemon and every application read alike (hca_core_clock 1 GHz).
uint64_t CompletionClockNs();

// Set by the consumer on a completion it withdrew (the QP went to RESET:
// libibverbs providers purge its completions from the CQ); polls step
// over it.
inline constexpr uint32_t kCqeSkip = 1u << 0;

// An affiliated or port event (ibv_async_event): the element is a QP
// number, CQ or SRQ handle, or port number according to the type.
struct AsyncEventSlot {
  uint32_t event_type;  // ibv_event_type value
  uint32_t element;
};
static_assert(sizeof(AsyncEventSlot) == 8);

// A CM event (nic/cm/cm_types.h CmEvent) as the daemon hands it to the
// client that owns the id.
struct CmEventSlot {
  uint8_t type;     // nic::CmEventType
  uint8_t qp_type;  // IBV_QPT_*
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t flow_control;
  uint8_t srq;
  uint32_t id;
  uint32_t listen_id;
  uint32_t remote_qpn;
  uint32_t remote_qkey;
  uint64_t service_id;
  uint16_t reason;  // REJ
  uint8_t sidr_status;
  uint8_t by_peer;
  uint8_t timed_out;
  uint8_t private_data_len;
  uint8_t reserved[2];
  wire::WireCmPath path;  // REQ / SIDR_REQ: the way back to the requester
  wire::WireCmIp ip;      // REQ / SIDR_REQ to an rdma_cm IP service
  uint8_t private_data[224];
};
static_assert(sizeof(CmEventSlot) == 336);

// Copy a slot out of shared memory: its fixed part, then only the SGEs or
// inline bytes that part says are used (bounded by the slot's capacity).
// A whole SqSlot is 584 bytes, and copying all of it for a one-SGE WRITE
// was most of what draining a send queue cost. The rest of `out` is left
// as it was: the conversions below read only what the counts name.
void CopySqSlot(const void* slot, SqSlot* out);
void CopyRqSlot(const void* slot, RqSlot* out);

// Fill a nic request from a slot copy; false when the slot is invalid
// (opcode, SGE count or inline length out of range).
bool SqSlotToSendWr(const SqSlot& s, nic::SendWr* wr);
bool RqSlotToRecvWr(const RqSlot& s, nic::RecvWr* wr);
// `timestamp`: CompletionClockNs() at the push, or 0 for a CQ without
// timestamps.
void CqeFromCompletion(const nic::WorkCompletion& wc, uint64_t timestamp,
                       CqeSlot* out);

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_WIRE_RING_SLOTS_H_
