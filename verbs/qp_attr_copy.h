// The QP attributes every struct on the verbs paths names alike: Debian's
// ibv_qp_attr and the kernel's ib_uverbs_qp_attr, rocemu_qp_attr, the
// session protocol's wire::WireQpAttr and the RNIC's nic::QpAttr. One copy
// of the scalar members, each converted to the destination's type (enums,
// ints, bytes); what differs per pair (the path MTU where a mask guards it,
// the address vectors, the capabilities of the kernel's flat layout) stays
// with the caller.
#ifndef ROCEMU_VERBS_QP_ATTR_COPY_H_
#define ROCEMU_VERBS_QP_ATTR_COPY_H_

namespace rocemu::verbs {

template <typename Dst, typename Src>
void CopyQpAttrScalars(const Src& s, Dst* d) {
  d->qp_state = static_cast<decltype(d->qp_state)>(s.qp_state);
  d->cur_qp_state = static_cast<decltype(d->cur_qp_state)>(s.cur_qp_state);
  d->qkey = s.qkey;
  d->rq_psn = s.rq_psn;
  d->sq_psn = s.sq_psn;
  d->dest_qp_num = s.dest_qp_num;
  d->qp_access_flags = s.qp_access_flags;
  d->pkey_index = s.pkey_index;
  d->max_rd_atomic = s.max_rd_atomic;
  d->max_dest_rd_atomic = s.max_dest_rd_atomic;
  d->min_rnr_timer = s.min_rnr_timer;
  d->port_num = s.port_num;
  d->timeout = s.timeout;
  d->retry_cnt = s.retry_cnt;
  d->rnr_retry = s.rnr_retry;
}

// The capabilities, where both name them as ibv_qp_cap does.
template <typename Dst, typename Src>
void CopyQpCap(const Src& s, Dst* d) {
  d->max_send_wr = s.max_send_wr;
  d->max_recv_wr = s.max_recv_wr;
  d->max_send_sge = s.max_send_sge;
  d->max_recv_sge = s.max_recv_sge;
  d->max_inline_data = s.max_inline_data;
}

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_QP_ATTR_COPY_H_
