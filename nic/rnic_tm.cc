// The RNIC's tag-matching verbs: TM SRQs and their list operations
// (nic/tag_list.h); the receive side is nic/tag_matching.cc.
#include "absl/strings/str_format.h"
#include "nic/rnic.h"

namespace rocemu::nic {

absl::StatusOr<SrqHandle> Rnic::CreateTmSrq(PdHandle pd, CqHandle cq,
                                            const SrqAttr& attr,
                                            uint32_t max_num_tags,
                                            uint32_t max_ops) {
  const TmCaps& caps = config_.device.tm_caps;
  if (max_num_tags == 0 || max_num_tags > caps.max_num_tags) {
    return absl::InvalidArgumentError(
        absl::StrFormat("TM SRQ max_num_tags %u outside [1, %u]", max_num_tags,
                        caps.max_num_tags));
  }
  if (max_ops == 0 || max_ops > caps.max_ops) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "TM SRQ max_ops %u outside [1, %u]", max_ops, caps.max_ops));
  }
  CompletionQueue* c = cqs_.Get(cq);
  if (c == nullptr) {
    return absl::NotFoundError(absl::StrFormat("no CQ 0x%08x", cq));
  }
  TmCaps asked = caps;
  asked.max_num_tags = max_num_tags;
  asked.max_ops = max_ops;
  absl::StatusOr<SrqHandle> h =
      srqs_.CreateTm(kKernelClient, pd, cq, attr, asked);
  if (h.ok()) c->Retain();
  return h;
}

absl::StatusOr<uint32_t> Rnic::PostSrqOp(SrqHandle srq, const TmOp& op) {
  SharedReceiveQueue* q = srqs_.Get(srq);
  if (q == nullptr) return absl::NotFoundError("no such SRQ");
  TagList* list = q->tm();
  if (list == nullptr) {
    return absl::InvalidArgumentError("not a tag-matching SRQ");
  }
  if (q->in_error()) return absl::FailedPreconditionError("SRQ in error");
  if ((op.flags & ~(tm_op_flags::kSignaled | tm_op_flags::kSync)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ops flags 0x%x unknown", op.flags));
  }
  if (op.opcode > TmOpcode::kSync) {
    return absl::InvalidArgumentError("ops opcode unknown");
  }
  // The count first: an ADD in step with it is eligible at once.
  if ((op.flags & tm_op_flags::kSync) != 0 || op.opcode == TmOpcode::kSync) {
    list->Sync(op.unexpected_cnt);
  }
  WorkCompletion wc;
  wc.wr_id = op.wr_id;
  wc.tagged = true;
  uint32_t handle = op.handle;
  switch (op.opcode) {
    case TmOpcode::kAdd: {
      absl::StatusOr<uint32_t> h = list->Add(op.add);
      if (!h.ok()) return h.status();
      handle = *h;
      wc.opcode = WcOpcode::kTmAdd;
      break;
    }
    case TmOpcode::kDel:
      wc.opcode = WcOpcode::kTmDel;
      if (!list->Del(op.handle)) wc.status = WcStatus::kTmErr;
      break;
    case TmOpcode::kSync:
      wc.opcode = WcOpcode::kTmSync;
      break;
  }
  if (!list->in_sync()) wc.wc_flags |= wc_flags::kTmSyncReq;
  if ((op.flags & tm_op_flags::kSignaled) == 0 &&
      wc.status == WcStatus::kSuccess) {
    return handle;
  }
  if (CompletionQueue* cq = cqs_.Get(q->cq())) {
    // A full CQ has raised its own CQ error; no QP owns this completion.
    (void)cq->Push(wc);
  }
  return handle;
}

void Rnic::CompleteTagged(Qp& qp, const WorkCompletion& wc) {
  if (wc.status == WcStatus::kSuccess) {
    ++counters_.rdma_recvs;
  } else {
    ++counters_.resp_cqe_error;
    NoteCompletion(qp, wc, true, DropReason::kNone, 0);
  }
  const SharedReceiveQueue* s = srqs_.Get(qp.init_.srq);
  if (s == nullptr) return;
  CompletionQueue* cq = cqs_.Get(s->cq());
  if (cq == nullptr) return;
  if (cq->Push(wc) != CqPushResult::kOk) CqOverflow(qp, s->cq(), *cq);
}

}  // namespace rocemu::nic
