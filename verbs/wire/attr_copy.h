// The attributes every struct on the verbs paths names alike, copied once:
// QP attributes (Debian's ibv_qp_attr, rocemu_qp_attr, the session
// protocol's wire::WireQpAttr, the RNIC's nic::QpAttr) and device limits
// (ibv_device_attr, rocemu_device_attr, wire::QueryDeviceResp,
// nic::DeviceAttr). Each member is converted to the destination's type;
// what differs per pair (the path MTU where a mask guards it, address
// vectors, GUID byte order, firmware strings) stays with the caller.
#ifndef ROCEMU_VERBS_WIRE_ATTR_COPY_H_
#define ROCEMU_VERBS_WIRE_ATTR_COPY_H_

namespace rocemu::verbs {

// Assigns with a static_cast to the member's type (enums included).
struct CastTo {
  template <typename To, typename From>
  void operator()(To& to, const From& from) const {
    to = static_cast<To>(from);
  }
};

// The QP attributes' scalar members, state through retry counts.
template <typename Dst, typename Src>
void CopyQpAttrScalars(const Src& s, Dst* d) {
  const CastTo set;
  set(d->qp_state, s.qp_state);
  set(d->cur_qp_state, s.cur_qp_state);
  set(d->qkey, s.qkey);
  set(d->rq_psn, s.rq_psn);
  set(d->sq_psn, s.sq_psn);
  set(d->dest_qp_num, s.dest_qp_num);
  set(d->qp_access_flags, s.qp_access_flags);
  set(d->pkey_index, s.pkey_index);
  set(d->max_rd_atomic, s.max_rd_atomic);
  set(d->max_dest_rd_atomic, s.max_dest_rd_atomic);
  set(d->min_rnr_timer, s.min_rnr_timer);
  set(d->port_num, s.port_num);
  set(d->timeout, s.timeout);
  set(d->retry_cnt, s.retry_cnt);
  set(d->rnr_retry, s.rnr_retry);
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

// The device's identity and limits, each assigned by `set(member, value)`
// (CastTo, or a conversion that clamps into ibv_device_attr's ints).
template <typename Dst, typename Src, typename Set = CastTo>
void CopyDeviceLimits(const Src& s, Dst* d, Set set = {}) {
  set(d->max_mr_size, s.max_mr_size);
  set(d->page_size_cap, s.page_size_cap);
  set(d->vendor_id, s.vendor_id);
  set(d->vendor_part_id, s.vendor_part_id);
  set(d->hw_ver, s.hw_ver);
  set(d->max_qp, s.max_qp);
  set(d->max_qp_wr, s.max_qp_wr);
  set(d->device_cap_flags, s.device_cap_flags);
  set(d->max_sge, s.max_sge);
  set(d->max_sge_rd, s.max_sge_rd);
  set(d->max_cq, s.max_cq);
  set(d->max_cqe, s.max_cqe);
  set(d->max_mr, s.max_mr);
  set(d->max_mw, s.max_mw);
  set(d->max_pd, s.max_pd);
  set(d->max_qp_rd_atom, s.max_qp_rd_atom);
  set(d->max_res_rd_atom, s.max_res_rd_atom);
  set(d->max_qp_init_rd_atom, s.max_qp_init_rd_atom);
  set(d->atomic_cap, s.atomic_cap);
  set(d->max_ah, s.max_ah);
  set(d->max_srq, s.max_srq);
  set(d->max_srq_wr, s.max_srq_wr);
  set(d->max_srq_sge, s.max_srq_sge);
  set(d->max_mcast_grp, s.max_mcast_grp);
  set(d->max_mcast_qp_attach, s.max_mcast_qp_attach);
  set(d->max_total_mcast_qp_attach, s.max_total_mcast_qp_attach);
  set(d->max_pkeys, s.max_pkeys);
  set(d->local_ca_ack_delay, s.local_ca_ack_delay);
  set(d->phys_port_cnt, s.phys_port_cnt);
}

}  // namespace rocemu::verbs

#endif  // ROCEMU_VERBS_WIRE_ATTR_COPY_H_
