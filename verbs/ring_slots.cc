#include "verbs/ring_slots.h"

#include <cstring>

namespace rocemu::verbs {

bool SqSlotToSendWr(const SqSlot& s, nic::SendWr* wr) {
  if (s.opcode > static_cast<uint8_t>(nic::WrOpcode::kSendWithInv)) {
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

void CqeFromCompletion(const nic::WorkCompletion& wc, CqeSlot* out) {
  *out = CqeSlot{};
  out->wr_id = wc.wr_id;
  out->status = static_cast<uint8_t>(wc.status);
  out->opcode = static_cast<uint8_t>(wc.opcode);
  out->pkey_index = wc.pkey_index;
  out->vendor_err = wc.vendor_err;
  out->byte_len = wc.byte_len;
  out->imm_data = wc.imm_data;
  out->invalidated_rkey = wc.invalidated_rkey;
  out->qp_num = wc.qp_num;
  out->src_qp = wc.src_qp;
  out->wc_flags = wc.wc_flags;
  out->slid = wc.slid;
  out->sl = wc.sl;
  out->dlid_path_bits = wc.dlid_path_bits;
}

}  // namespace rocemu::verbs
