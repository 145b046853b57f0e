#include "verbs/wire/ring_slots.h"

#include <time.h>

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace rocemu::verbs {

namespace {

// The variable part of a slot. One SGE, the usual WQE, is a 16-byte move,
// where a copy of variable length is a `rep movs` whose start-up costs
// more than the bytes.
void CopySges(uint8_t* to, const uint8_t* from, size_t used) {
  if (used == sizeof(WireSge)) {
    std::memcpy(to, from, sizeof(WireSge));
  } else {
    std::memcpy(to, from, used);
  }
}

}  // namespace

void CopySqSlot(const void* slot, SqSlot* out) {
  constexpr size_t kFixed = offsetof(SqSlot, sge);
  const auto* from = static_cast<const uint8_t*>(slot);
  std::memcpy(out, from, kFixed);
  // BIND_MW carries its region's L_Key in sge[0] with num_sge 0.
  size_t used = sizeof(WireSge);
  if ((out->send_flags & nic::send_flags::kInline) != 0) {
    used = std::max<size_t>(
        used, std::min<size_t>(out->inline_len, nic::kMaxInlineData));
  } else {
    used = std::max<size_t>(
        used, std::min<size_t>(out->num_sge, nic::kMaxSge) * sizeof(WireSge));
  }
  CopySges(reinterpret_cast<uint8_t*>(out) + kFixed, from + kFixed, used);
}

void CopyRqSlot(const void* slot, RqSlot* out) {
  constexpr size_t kFixed = offsetof(RqSlot, sge);
  const auto* from = static_cast<const uint8_t*>(slot);
  std::memcpy(out, from, kFixed);
  const size_t used =
      std::min<size_t>(out->num_sge, nic::kMaxSge) * sizeof(WireSge);
  CopySges(reinterpret_cast<uint8_t*>(out) + kFixed, from + kFixed, used);
}

bool SqSlotToSendWr(const SqSlot& s, nic::SendWr* wr) {
  if (s.opcode > static_cast<uint8_t>(nic::WrOpcode::kSendWithInv) &&
      s.opcode != static_cast<uint8_t>(nic::WrOpcode::kFlush) &&
      s.opcode != static_cast<uint8_t>(nic::WrOpcode::kAtomicWrite)) {
    return false;
  }
  wr->wr_id = s.wr_id;
  wr->opcode = static_cast<nic::WrOpcode>(s.opcode);
  wr->send_flags = s.send_flags;
  wr->imm_data = s.imm_data;
  wr->invalidate_rkey = s.invalidate_rkey;
  wr->rdma = {s.remote_addr, s.rkey};
  wr->atomic = {s.remote_addr, s.compare_add, s.swap, s.rkey};
  wr->ud = {s.ah, s.remote_qpn, s.remote_qkey};
  wr->remote_srqn = s.remote_srqn;
  wr->sg_list.Clear();
  wr->inline_data.set_size(0);
  if (wr->opcode == nic::WrOpcode::kBindMw) {
    wr->bind = {.mw_rkey = s.invalidate_rkey,
                .new_rkey = s.rkey,
                .mr_lkey = s.sge[0].lkey,
                .access = static_cast<uint32_t>(s.swap),
                .addr = s.remote_addr,
                .length = s.compare_add,
                .type = static_cast<uint8_t>(s.swap >> 32)};
    return true;
  }
  if (wr->opcode == nic::WrOpcode::kFlush) {
    if (s.compare_add > UINT32_MAX) return false;
    wr->flush = {.length = static_cast<uint32_t>(s.compare_add),
                 .type = static_cast<uint8_t>(s.swap),
                 .level = static_cast<uint8_t>(s.swap >> 8)};
    return true;
  }
  if (wr->opcode == nic::WrOpcode::kAtomicWrite) return true;  // atomic.swap
  if (wr->is_inline()) {
    return wr->inline_data.Assign({s.inline_data, s.inline_len});
  }
  if (s.num_sge > nic::kMaxSge) return false;
  for (uint32_t i = 0; i < s.num_sge; ++i) {
    wr->sg_list.PushBack({s.sge[i].addr, s.sge[i].length, s.sge[i].lkey});
  }
  return true;
}

bool RqSlotToRecvWr(const RqSlot& s, nic::RecvWr* wr) {
  if (s.num_sge > nic::kMaxSge) return false;
  wr->wr_id = s.wr_id;
  wr->sg_list.Clear();
  for (uint32_t i = 0; i < s.num_sge; ++i) {
    wr->sg_list.PushBack({s.sge[i].addr, s.sge[i].length, s.sge[i].lkey});
  }
  return true;
}

uint64_t CompletionClockNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000u +
         static_cast<uint64_t>(ts.tv_nsec);
}

void CqeFromCompletion(const nic::WorkCompletion& wc, uint64_t timestamp,
                       CqeSlot* out) {
  // One store of the whole entry: `out` is shared memory the application
  // polls, not worth writing twice (zeroed, then each field).
  *out = CqeSlot{.wr_id = wc.wr_id,
                 .status = static_cast<uint8_t>(wc.status),
                 .opcode = static_cast<uint8_t>(wc.opcode),
                 .pkey_index = wc.pkey_index,
                 .vendor_err = wc.vendor_err,
                 .byte_len = wc.byte_len,
                 .imm_data = wc.imm_data,
                 .invalidated_rkey = wc.invalidated_rkey,
                 .qp_num = wc.qp_num,
                 .src_qp = wc.src_qp,
                 .wc_flags = wc.wc_flags,
                 .slid = wc.slid,
                 .sl = wc.sl,
                 .dlid_path_bits = wc.dlid_path_bits,
                 .flags = 0,
                 .timestamp = timestamp,
                 .tm_tag = wc.tm_tag,
                 .tm_priv = wc.tm_priv,
                 .reserved = 0};
}

}  // namespace rocemu::verbs
