#include "tests/sim/matrix_pair.h"

#include <utility>

#include "nic/gid_table.h"

namespace rocemu::sim {
namespace {

nic::RnicConfig DeviceConfig(uint8_t id, uint32_t recorder_events) {
  nic::RnicConfig c;
  c.mac = {0x02, 0, 0, 0, 0, id};
  c.gid = nic::GidFromIpv4(10, 0, 0, id);
  c.port.active_mtu = nic::Mtu::k4096;
  c.flight_recorder_events = recorder_events;
  return c;
}

absl::Status Setup(const PairOptions& o, PairSide* s) {
  absl::StatusOr<nic::PdHandle> pd = s->nic.AllocPd();
  if (!pd.ok()) return pd.status();
  s->pd = *pd;
  absl::StatusOr<nic::CqHandle> cq = s->nic.CreateCq(o.cqe);
  if (!cq.ok()) return cq.status();
  s->cq = *cq;
  nic::QpInitAttr init;
  init.qp_type = nic::QpType::kRc;
  init.send_cq = s->cq;
  init.recv_cq = s->cq;
  init.cap = {o.max_send_wr, o.max_recv_wr, 1, 1, 0};
  for (uint32_t i = 0; i <= o.extra_qps; ++i) {
    absl::StatusOr<uint32_t> qpn = s->nic.CreateQp(s->pd, init);
    if (!qpn.ok()) return qpn.status();
    s->qpns.push_back(*qpn);
  }
  s->buf.assign(o.buf_size, 0);
  absl::StatusOr<uint32_t> key =
      s->nic.RegMr(s->pd, s->buf.data(), s->buf.size(),
                   nic::access::kLocalWrite | nic::access::kRemoteWrite |
                       nic::access::kRemoteRead | nic::access::kRemoteAtomic);
  if (!key.ok()) return key.status();
  s->key = *key;
  return absl::OkStatus();
}

// RESET -> INIT -> RTR -> RTS towards `peer`, as ibv_modify_qp is called
// for an RC QP.
absl::Status Connect(const PairOptions& o, PairSide& self, PairSide& peer,
                     size_t index, uint32_t sq_psn, uint32_t rq_psn) {
  const uint32_t qpn = self.qpns[index];
  using namespace nic::qp_attr;  // NOLINT
  nic::QpAttr a;
  a.qp_state = nic::QpState::kInit;
  a.pkey_index = 0;
  a.port_num = 1;
  a.qp_access_flags = nic::access::kRemoteWrite | nic::access::kRemoteRead |
                      nic::access::kRemoteAtomic;
  absl::Status st =
      self.nic.ModifyQp(qpn, a, kState | kPkeyIndex | kPort | kAccessFlags);
  if (!st.ok()) return st;
  a.qp_state = nic::QpState::kRtr;
  a.path_mtu = o.mtu;
  a.dest_qp_num = peer.qpns[index];
  a.rq_psn = rq_psn;
  a.max_dest_rd_atomic = o.max_rd_atomic;
  a.min_rnr_timer = o.min_rnr_timer;
  a.ah_attr.dgid = peer.nic.config().gid;
  a.ah_attr.dmac = peer.nic.config().mac;
  a.ah_attr.traffic_class = 26 << 2;
  st = self.nic.ModifyQp(qpn, a,
                         kState | kAv | kPathMtu | kDestQpn | kRqPsn |
                             kMaxDestRdAtomic | kMinRnrTimer);
  if (!st.ok()) return st;
  a.qp_state = nic::QpState::kRts;
  a.sq_psn = sq_psn;
  a.timeout = o.timeout;
  a.retry_cnt = o.retry_cnt;
  a.rnr_retry = o.rnr_retry;
  a.max_rd_atomic = o.max_rd_atomic;
  return self.nic.ModifyQp(
      qpn, a,
      kState | kSqPsn | kTimeout | kRetryCnt | kRnrRetry | kMaxQpRdAtomic);
}

}  // namespace

MatrixPair::MatrixPair(const PairOptions& options)
    : options_(options),
      a_(std::make_unique<PairSide>(
          DeviceConfig(1, options.flight_recorder_events))),
      b_(std::make_unique<PairSide>(
          DeviceConfig(2, options.flight_recorder_events))),
      net_(std::make_unique<simnet::Network>(
          simnet::NetworkConfig{.seed = options.seed})) {}

MatrixPair::~MatrixPair() { CloseCaptures(); }

absl::StatusOr<std::unique_ptr<MatrixPair>> MatrixPair::Create(
    const PairOptions& options) {
  std::unique_ptr<MatrixPair> p(new MatrixPair(options));
  absl::Status st = p->Init();
  if (!st.ok()) return st;
  return p;
}

absl::Status MatrixPair::Init() {
  absl::Status st = Setup(options_, a_.get());
  if (!st.ok()) return st;
  st = Setup(options_, b_.get());
  if (!st.ok()) return st;
  // PSNs near the 24-bit wrap so that every long cell crosses it.
  constexpr uint32_t kPsnA = 0xFFFF00;
  constexpr uint32_t kPsnB = 0xFFFFF0;
  for (size_t i = 0; i < a_->qpns.size(); ++i) {
    st = Connect(options_, *a_, *b_, i, kPsnA, kPsnB);
    if (!st.ok()) return st;
    st = Connect(options_, *b_, *a_, i, kPsnB, kPsnA);
    if (!st.ok()) return st;
  }
  a_->node = net_->AddNode(&a_->nic, 1, "a");
  b_->node = net_->AddNode(&b_->nic, 1, "b");
  absl::StatusOr<simnet::LinkId> link =
      net_->Connect(a_->node, 0, b_->node, 0, options_.link);
  if (!link.ok()) return link.status();
  link_ = *link;
  if (!options_.capture_path.empty()) {
    st = net_->CapturePort(a_->node, 0, options_.capture_path);
    if (!st.ok()) return st;
  }
  if (!options_.link_tap_path.empty()) {
    absl::StatusOr<std::unique_ptr<simnet::PcapWriter>> w =
        simnet::PcapWriter::Open(options_.link_tap_path);
    if (!w.ok()) return w.status();
    tap_ = std::move(*w);
    simnet::PcapWriter* tap = tap_.get();
    auto hook = [tap](const simnet::FaultContext& c) {
      tap->Write(c.now, c.frame);
      return simnet::FaultAction::Pass();
    };
    net_->SetFaultHook(link_, simnet::Dir::kAtoB, hook);
    net_->SetFaultHook(link_, simnet::Dir::kBtoA, hook);
  }
  return absl::OkStatus();
}

void MatrixPair::CloseCaptures() {
  net_->CloseCaptures();
  if (tap_ != nullptr) {
    net_->SetFaultHook(link_, simnet::Dir::kAtoB, nullptr);
    net_->SetFaultHook(link_, simnet::Dir::kBtoA, nullptr);
    tap_.reset();
  }
}

}  // namespace rocemu::sim
