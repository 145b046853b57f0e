// Device counters, named as operators know them from Linux rxe
// (rdma statistic / hw_counters), mlx5 hw_counters and ibv_port_attr, so
// that existing dashboards and habits carry over. The engines increment the
// fields directly (plain integers: one polling thread owns the device).
//
// Where the names come from:
//   rxe:  sent_pkts rcvd_pkts duplicate_request out_of_sequence rcvd_rnr_err
//         send_rnr_err rcvd_seq_err ack_deffered (sic, rxe's spelling)
//         retry_exceeded_err retry_rnr_exceeded_err completer_retry_err
//         send_err link_downed rdma_sends rdma_recvs sent_bytes rcvd_bytes
//   mlx5: out_of_buffer local_ack_timeout_err rnr_nak_retry_err
//         packet_seq_err implied_nak_seq_err req_cqe_error resp_cqe_error
//         req_cqe_flush_error resp_cqe_flush_error req_remote_access_errors
//         req_remote_invalid_request resp_local_length_error
//         resp_remote_access_errors rx_write_requests rx_read_requests
//         rx_atomic_requests rx_icrc_encapsulated np_cnp_sent
//         np_ecn_marked_roce_packets rp_cnp_handled rp_cnp_ignored
//   ibv_port_attr: bad_pkey_cntr qkey_viol_cntr
//   IB PortCountersExtended (sysfs counters/): multicast_rcv_packets
//   rocemu's own (no standard name exists; rxe drops these silently):
//         rx_unknown_qp rx_wrong_state rx_bad_opcode rx_malformed
//         rx_mcast_no_group (a multicast frame no local QP is attached to)
//         rx_atomic_write_requests rx_flush_requests (IBTA 1.5 requests
//         executed, in the style of mlx5's rx_*_requests)
//         mr_access_faults (a process region's pages could not be reached:
//         the ODP page fault an RNIC could not resolve)
#ifndef ROCEMU_NIC_COUNTERS_H_
#define ROCEMU_NIC_COUNTERS_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace rocemu::nic {

struct DeviceCounters {
  // rxe
  uint64_t sent_pkts = 0;
  uint64_t rcvd_pkts = 0;
  uint64_t duplicate_request = 0;  // responder: duplicate PSN received
  uint64_t out_of_sequence = 0;    // responder: PSN ahead of expected
  uint64_t rcvd_rnr_err = 0;       // requester: RNR NAK received
  uint64_t send_rnr_err = 0;       // responder: RNR NAK sent
  uint64_t rcvd_seq_err = 0;       // requester: PSN sequence error NAK
  uint64_t ack_deferred = 0;       // responder: ACK coalesced
  uint64_t retry_exceeded_err = 0;
  uint64_t retry_rnr_exceeded_err = 0;
  uint64_t completer_retry_err = 0;  // retransmissions started
  uint64_t send_err = 0;             // frames the carrier refused
  uint64_t link_downed = 0;
  uint64_t rdma_sends = 0;
  uint64_t rdma_recvs = 0;
  uint64_t sent_bytes = 0;
  uint64_t rcvd_bytes = 0;
  // mlx5
  uint64_t out_of_buffer = 0;  // message arrived with no receive WR (RNR)
  uint64_t local_ack_timeout_err = 0;
  uint64_t rnr_nak_retry_err = 0;
  uint64_t packet_seq_err = 0;
  uint64_t implied_nak_seq_err = 0;
  uint64_t req_cqe_error = 0;
  uint64_t resp_cqe_error = 0;
  uint64_t req_cqe_flush_error = 0;
  uint64_t resp_cqe_flush_error = 0;
  uint64_t req_remote_access_errors = 0;
  uint64_t req_remote_invalid_request = 0;
  uint64_t resp_local_length_error = 0;
  uint64_t resp_remote_access_errors = 0;
  uint64_t rx_write_requests = 0;
  uint64_t rx_read_requests = 0;
  uint64_t rx_atomic_requests = 0;
  uint64_t rx_atomic_write_requests = 0;
  uint64_t rx_flush_requests = 0;
  uint64_t rx_icrc_encapsulated = 0;  // frames dropped for a bad ICRC
  uint64_t np_cnp_sent = 0;
  uint64_t np_ecn_marked_roce_packets = 0;
  uint64_t rp_cnp_handled = 0;
  uint64_t rp_cnp_ignored = 0;
  // ibv_port_attr
  uint64_t bad_pkey_cntr = 0;
  uint64_t qkey_viol_cntr = 0;
  uint64_t multicast_rcv_packets = 0;
  // rocemu
  uint64_t rx_unknown_qp = 0;
  uint64_t rx_mcast_no_group = 0;
  uint64_t rx_wrong_state = 0;
  uint64_t rx_bad_opcode = 0;
  uint64_t rx_malformed = 0;
  uint64_t mr_access_faults = 0;
  // GSI (QP1): management datagrams
  uint64_t mad_rcvd = 0;
  uint64_t mad_sent = 0;
  uint64_t mad_err_resp_sent = 0;
  uint64_t mad_rx_drop_bad_version = 0;
  uint64_t mad_rx_drop_malformed = 0;
  uint64_t mad_rx_drop_pkey = 0;
  uint64_t mad_rx_drop_qkey = 0;
  uint64_t mad_rx_drop_unsupported = 0;
  uint64_t mad_tx_drop = 0;
  // Communication Manager (names as Linux's ib_cm counters, cm_*)
  uint64_t cm_req_sent = 0;
  uint64_t cm_req_rcvd = 0;
  uint64_t cm_rep_sent = 0;
  uint64_t cm_rep_rcvd = 0;
  uint64_t cm_rtu_sent = 0;
  uint64_t cm_rtu_rcvd = 0;
  uint64_t cm_mra_sent = 0;
  uint64_t cm_mra_rcvd = 0;
  uint64_t cm_rej_sent = 0;
  uint64_t cm_rej_rcvd = 0;
  uint64_t cm_dreq_sent = 0;
  uint64_t cm_dreq_rcvd = 0;
  uint64_t cm_drep_sent = 0;
  uint64_t cm_drep_rcvd = 0;
  uint64_t cm_sidr_req_sent = 0;
  uint64_t cm_sidr_req_rcvd = 0;
  uint64_t cm_sidr_rep_sent = 0;
  uint64_t cm_sidr_rep_rcvd = 0;
  uint64_t cm_dup_req_rcvd = 0;
  uint64_t cm_dup_rep_rcvd = 0;
  uint64_t cm_dup_rtu_rcvd = 0;
  uint64_t cm_dup_mra_rcvd = 0;
  uint64_t cm_dup_dreq_rcvd = 0;
  // A DREP for a DREQ already answered otherwise (simultaneous disconnect):
  // Linux counts it with the duplicates too.
  uint64_t cm_dup_drep_rcvd = 0;
  uint64_t cm_dup_sidr_req_rcvd = 0;
  uint64_t cm_retries = 0;
  uint64_t cm_timeouts = 0;
  uint64_t cm_stale_conn = 0;
  uint64_t cm_comm_est = 0;
  uint64_t cm_rx_unmatched = 0;
  uint64_t cm_rx_unsupported = 0;
  uint64_t cm_rx_wrong_state = 0;
  uint64_t cm_event_drop = 0;

  // Calls f(std::string_view name, uint64_t value) for every counter, in a
  // fixed order, under its operator-facing name.
  template <typename F>
  void Enumerate(F&& f) const;
  // The counter with that operator-facing name.
  std::optional<uint64_t> Get(std::string_view name) const;
  void Reset() { *this = DeviceCounters{}; }
};

struct CounterField {
  const char* name;
  uint64_t DeviceCounters::*field;
};
inline constexpr CounterField kCounterFields[] = {
    {"sent_pkts", &DeviceCounters::sent_pkts},
    {"rcvd_pkts", &DeviceCounters::rcvd_pkts},
    {"duplicate_request", &DeviceCounters::duplicate_request},
    {"out_of_sequence", &DeviceCounters::out_of_sequence},
    {"rcvd_rnr_err", &DeviceCounters::rcvd_rnr_err},
    {"send_rnr_err", &DeviceCounters::send_rnr_err},
    {"rcvd_seq_err", &DeviceCounters::rcvd_seq_err},
    {"ack_deffered", &DeviceCounters::ack_deferred},
    {"retry_exceeded_err", &DeviceCounters::retry_exceeded_err},
    {"retry_rnr_exceeded_err", &DeviceCounters::retry_rnr_exceeded_err},
    {"completer_retry_err", &DeviceCounters::completer_retry_err},
    {"send_err", &DeviceCounters::send_err},
    {"link_downed", &DeviceCounters::link_downed},
    {"rdma_sends", &DeviceCounters::rdma_sends},
    {"rdma_recvs", &DeviceCounters::rdma_recvs},
    {"sent_bytes", &DeviceCounters::sent_bytes},
    {"rcvd_bytes", &DeviceCounters::rcvd_bytes},
    {"out_of_buffer", &DeviceCounters::out_of_buffer},
    {"local_ack_timeout_err", &DeviceCounters::local_ack_timeout_err},
    {"rnr_nak_retry_err", &DeviceCounters::rnr_nak_retry_err},
    {"packet_seq_err", &DeviceCounters::packet_seq_err},
    {"implied_nak_seq_err", &DeviceCounters::implied_nak_seq_err},
    {"req_cqe_error", &DeviceCounters::req_cqe_error},
    {"resp_cqe_error", &DeviceCounters::resp_cqe_error},
    {"req_cqe_flush_error", &DeviceCounters::req_cqe_flush_error},
    {"resp_cqe_flush_error", &DeviceCounters::resp_cqe_flush_error},
    {"req_remote_access_errors", &DeviceCounters::req_remote_access_errors},
    {"req_remote_invalid_request", &DeviceCounters::req_remote_invalid_request},
    {"resp_local_length_error", &DeviceCounters::resp_local_length_error},
    {"resp_remote_access_errors", &DeviceCounters::resp_remote_access_errors},
    {"rx_write_requests", &DeviceCounters::rx_write_requests},
    {"rx_read_requests", &DeviceCounters::rx_read_requests},
    {"rx_atomic_requests", &DeviceCounters::rx_atomic_requests},
    {"rx_atomic_write_requests", &DeviceCounters::rx_atomic_write_requests},
    {"rx_flush_requests", &DeviceCounters::rx_flush_requests},
    {"rx_icrc_encapsulated", &DeviceCounters::rx_icrc_encapsulated},
    {"np_cnp_sent", &DeviceCounters::np_cnp_sent},
    {"np_ecn_marked_roce_packets", &DeviceCounters::np_ecn_marked_roce_packets},
    {"rp_cnp_handled", &DeviceCounters::rp_cnp_handled},
    {"rp_cnp_ignored", &DeviceCounters::rp_cnp_ignored},
    {"bad_pkey_cntr", &DeviceCounters::bad_pkey_cntr},
    {"qkey_viol_cntr", &DeviceCounters::qkey_viol_cntr},
    {"multicast_rcv_packets", &DeviceCounters::multicast_rcv_packets},
    {"rx_unknown_qp", &DeviceCounters::rx_unknown_qp},
    {"rx_mcast_no_group", &DeviceCounters::rx_mcast_no_group},
    {"rx_wrong_state", &DeviceCounters::rx_wrong_state},
    {"rx_bad_opcode", &DeviceCounters::rx_bad_opcode},
    {"rx_malformed", &DeviceCounters::rx_malformed},
    {"mr_access_faults", &DeviceCounters::mr_access_faults},
    {"mad_rcvd", &DeviceCounters::mad_rcvd},
    {"mad_sent", &DeviceCounters::mad_sent},
    {"mad_err_resp_sent", &DeviceCounters::mad_err_resp_sent},
    {"mad_rx_drop_bad_version", &DeviceCounters::mad_rx_drop_bad_version},
    {"mad_rx_drop_malformed", &DeviceCounters::mad_rx_drop_malformed},
    {"mad_rx_drop_pkey", &DeviceCounters::mad_rx_drop_pkey},
    {"mad_rx_drop_qkey", &DeviceCounters::mad_rx_drop_qkey},
    {"mad_rx_drop_unsupported", &DeviceCounters::mad_rx_drop_unsupported},
    {"mad_tx_drop", &DeviceCounters::mad_tx_drop},
    {"cm_req_sent", &DeviceCounters::cm_req_sent},
    {"cm_req_rcvd", &DeviceCounters::cm_req_rcvd},
    {"cm_rep_sent", &DeviceCounters::cm_rep_sent},
    {"cm_rep_rcvd", &DeviceCounters::cm_rep_rcvd},
    {"cm_rtu_sent", &DeviceCounters::cm_rtu_sent},
    {"cm_rtu_rcvd", &DeviceCounters::cm_rtu_rcvd},
    {"cm_mra_sent", &DeviceCounters::cm_mra_sent},
    {"cm_mra_rcvd", &DeviceCounters::cm_mra_rcvd},
    {"cm_rej_sent", &DeviceCounters::cm_rej_sent},
    {"cm_rej_rcvd", &DeviceCounters::cm_rej_rcvd},
    {"cm_dreq_sent", &DeviceCounters::cm_dreq_sent},
    {"cm_dreq_rcvd", &DeviceCounters::cm_dreq_rcvd},
    {"cm_drep_sent", &DeviceCounters::cm_drep_sent},
    {"cm_drep_rcvd", &DeviceCounters::cm_drep_rcvd},
    {"cm_sidr_req_sent", &DeviceCounters::cm_sidr_req_sent},
    {"cm_sidr_req_rcvd", &DeviceCounters::cm_sidr_req_rcvd},
    {"cm_sidr_rep_sent", &DeviceCounters::cm_sidr_rep_sent},
    {"cm_sidr_rep_rcvd", &DeviceCounters::cm_sidr_rep_rcvd},
    {"cm_dup_req_rcvd", &DeviceCounters::cm_dup_req_rcvd},
    {"cm_dup_rep_rcvd", &DeviceCounters::cm_dup_rep_rcvd},
    {"cm_dup_rtu_rcvd", &DeviceCounters::cm_dup_rtu_rcvd},
    {"cm_dup_mra_rcvd", &DeviceCounters::cm_dup_mra_rcvd},
    {"cm_dup_dreq_rcvd", &DeviceCounters::cm_dup_dreq_rcvd},
    {"cm_dup_drep_rcvd", &DeviceCounters::cm_dup_drep_rcvd},
    {"cm_dup_sidr_req_rcvd", &DeviceCounters::cm_dup_sidr_req_rcvd},
    {"cm_retries", &DeviceCounters::cm_retries},
    {"cm_timeouts", &DeviceCounters::cm_timeouts},
    {"cm_stale_conn", &DeviceCounters::cm_stale_conn},
    {"cm_comm_est", &DeviceCounters::cm_comm_est},
    {"cm_rx_unmatched", &DeviceCounters::cm_rx_unmatched},
    {"cm_rx_unsupported", &DeviceCounters::cm_rx_unsupported},
    {"cm_rx_wrong_state", &DeviceCounters::cm_rx_wrong_state},
    {"cm_event_drop", &DeviceCounters::cm_event_drop},
};
// Every field is listed exactly once (a new field must be added above).
static_assert(sizeof(kCounterFields) / sizeof(kCounterFields[0]) ==
              sizeof(DeviceCounters) / sizeof(uint64_t));

template <typename F>
void DeviceCounters::Enumerate(F&& f) const {
  for (const CounterField& c : kCounterFields) {
    f(std::string_view(c.name), this->*c.field);
  }
}

inline std::optional<uint64_t> DeviceCounters::Get(
    std::string_view name) const {
  for (const CounterField& c : kCounterFields) {
    if (name == c.name) return this->*c.field;
  }
  return std::nullopt;
}

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_COUNTERS_H_
