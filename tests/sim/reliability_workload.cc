#include "tests/sim/reliability_workload.h"

#include <algorithm>
#include <cstring>
#include <deque>

#include "absl/strings/str_cat.h"
#include "nic/completion.h"
#include "nic/work_request.h"
#include "tests/simnet/rng.h"

namespace rocemu::sim {
namespace {

using nic::WcOpcode;
using nic::WcStatus;
using nic::WorkCompletion;
using nic::WrOpcode;

constexpr uint32_t kSlotSlack = 64;  // start offsets inside a slot vary
uint64_t SlotStride(const WorkloadConfig& c) { return c.max_msg + kSlotSlack; }
// After the slots: A keeps the atomics' 8-byte results there (one per slot),
// B the FETCH_ADD counter and, a cache line further, the CMP_SWAP word.
uint64_t AtomicBase(const WorkloadConfig& c) {
  return uint64_t{c.window} * SlotStride(c);
}
constexpr uint64_t kCasWord = 64;

// Bytes of message `seed`: every message's pattern differs from every other.
void FillPattern(uint8_t* p, size_t n, uint64_t seed) {
  size_t i = 0;
  for (uint64_t w = 0; i + 8 <= n; i += 8, ++w) {
    const uint64_t v = simnet::Mix64(seed ^ (w * 0x9E3779B97F4A7C15ull));
    std::memcpy(p + i, &v, 8);
  }
  const uint64_t tail = simnet::Mix64(~seed);
  for (size_t j = 0; i < n; ++i, ++j)
    p[i] = static_cast<uint8_t>(tail >> (8 * j));
}

// Makes dst differ from src in every byte, so that bytes never placed show.
void Poison(uint8_t* dst, const uint8_t* src, size_t n) {
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<uint8_t>(~src[i]);
}

WcOpcode ExpectedWcOpcode(WrOpcode op) {
  switch (op) {
    case WrOpcode::kRdmaWrite:
      return WcOpcode::kRdmaWrite;
    case WrOpcode::kRdmaRead:
      return WcOpcode::kRdmaRead;
    case WrOpcode::kAtomicCmpAndSwp:
      return WcOpcode::kCompSwap;
    case WrOpcode::kAtomicFetchAndAdd:
      return WcOpcode::kFetchAdd;
    default:
      return WcOpcode::kSend;
  }
}

struct Pending {
  WrOpcode op = WrOpcode::kSend;
  uint32_t slot = 0;
  uint64_t off = 0;  // of the data (same offset in A's and B's buffer)
  uint32_t len = 0;
  uint64_t expect_orig = 0;  // atomics
  bool active = false;
  bool recv_done = false;  // SEND: B's receive completion seen
};

class Driver {
 public:
  Driver(MatrixPair& pair, const WorkloadConfig& c)
      : pair_(pair),
        a_(pair.a()),
        b_(pair.b()),
        c_(c),
        rng_(c.seed, 0x5157),
        mtu_(nic::PathMtuBytes(pair.options().mtu)) {
    for (uint32_t s = c.window; s > 0; --s) free_slots_.push_back(s - 1);
    std::memcpy(&model_counter_, b_.buf.data() + AtomicBase(c), 8);
    std::memcpy(&model_cas_, b_.buf.data() + AtomicBase(c) + kCasWord, 8);
  }

  WorkloadResult Run();

 private:
  template <typename... Args>
  void Error(const Args&... args) {
    ++r_.error_count;
    if (r_.errors.size() < c_.max_errors) {
      r_.errors.push_back(absl::StrCat(args...));
    }
  }
  bool MorePending() const {
    if (c_.workload == Workload::kAtomic) return r_.atomics < c_.atomic_ops;
    return r_.data_bytes < c_.total_bytes;
  }
  WrOpcode NextOp();
  uint32_t NextLen();
  void PostOne();
  bool Poll();
  void OnSendCompletion(const WorkCompletion& wc);
  void OnRecvCompletion(const WorkCompletion& wc);
  void CheckBytes(const Pending& p, uint64_t id, const uint8_t* got,
                  const uint8_t* want);

  MatrixPair& pair_;
  PairSide& a_;
  PairSide& b_;
  const WorkloadConfig c_;
  simnet::Rng rng_;
  const uint32_t mtu_;
  WorkloadResult r_;
  std::vector<Pending> pend_;
  std::vector<uint32_t> free_slots_;
  std::deque<uint64_t> expect_recv_;  // SEND wr_ids in posting order
  uint64_t outstanding_ = 0;
  uint64_t atomic_seq_ = 0;
  uint64_t model_counter_ = 0;
  uint64_t model_cas_ = 0;
  std::vector<WorkCompletion> got_a_, got_b_;
};

WrOpcode Driver::NextOp() {
  auto atomic = [this] {
    return (atomic_seq_++ & 1) ? WrOpcode::kAtomicCmpAndSwp
                               : WrOpcode::kAtomicFetchAndAdd;
  };
  switch (c_.workload) {
    case Workload::kWrite:
      return WrOpcode::kRdmaWrite;
    case Workload::kRead:
      return WrOpcode::kRdmaRead;
    case Workload::kSend:
      return WrOpcode::kSend;
    case Workload::kAtomic:
      return atomic();
    case Workload::kMixed:
      break;
  }
  const uint64_t r = rng_.Uniform(20);
  if (r < 7) return WrOpcode::kRdmaWrite;
  if (r < 12) return WrOpcode::kRdmaRead;
  if (r < 17) return WrOpcode::kSend;
  return atomic();
}

uint32_t Driver::NextLen() {
  const uint32_t edges[] = {1, mtu_ - 1, mtu_, mtu_ + 1, c_.max_msg};
  const uint64_t n = pend_.size();
  if (n < std::size(edges)) return std::min(edges[n], c_.max_msg);
  // Log-uniform: a power of two, then uniform within the octave.
  uint32_t octaves = 0;
  while ((2u << octaves) <= c_.max_msg) ++octaves;
  const uint32_t e = static_cast<uint32_t>(rng_.Uniform(octaves + 1));
  const uint64_t len = (uint64_t{1} << e) + rng_.Uniform(uint64_t{1} << e);
  return static_cast<uint32_t>(std::min<uint64_t>(len, c_.max_msg));
}

void Driver::PostOne() {
  const uint64_t id = pend_.size();
  Pending p;
  p.op = NextOp();
  p.slot = free_slots_.back();
  free_slots_.pop_back();
  p.active = true;
  nic::SendWr wr;
  wr.wr_id = id;
  wr.opcode = p.op;
  wr.send_flags = nic::send_flags::kSignaled;
  uint8_t* const abuf = a_.buf.data();
  uint8_t* const bbuf = b_.buf.data();
  const uint64_t pattern_seed = c_.seed * 0x100000001B3ull + id;
  if (p.op == WrOpcode::kAtomicFetchAndAdd ||
      p.op == WrOpcode::kAtomicCmpAndSwp) {
    p.len = 8;
    p.off = AtomicBase(c_) + uint64_t{p.slot} * 8;
    wr.sg_list = {nic::Sge{a_.Va(p.off), 8, a_.key}};
    wr.atomic.rkey = b_.key;
    p.expect_orig =
        p.op == WrOpcode::kAtomicFetchAndAdd ? model_counter_ : model_cas_;
    if (p.op == WrOpcode::kAtomicFetchAndAdd) {
      wr.atomic.remote_addr = b_.Va(AtomicBase(c_));
      wr.atomic.compare_add = 1 + rng_.Uniform(1u << 20);
      model_counter_ += wr.atomic.compare_add;
    } else {
      wr.atomic.remote_addr = b_.Va(AtomicBase(c_) + kCasWord);
      // One in four compares misses: no swap, the current value returns.
      const bool hit = rng_.Uniform(4) != 0;
      wr.atomic.compare_add = hit ? model_cas_ : model_cas_ ^ 1;
      wr.atomic.swap = simnet::Mix64(pattern_seed);
      if (hit) model_cas_ = wr.atomic.swap;
    }
    const uint64_t poison = ~p.expect_orig;
    std::memcpy(abuf + p.off, &poison, 8);
    ++r_.atomics;
  } else {
    p.len = NextLen();
    p.off = uint64_t{p.slot} * SlotStride(c_) + rng_.Uniform(kSlotSlack);
    wr.sg_list = {nic::Sge{a_.Va(p.off), p.len, a_.key}};
    wr.rdma.remote_addr = b_.Va(p.off);
    wr.rdma.rkey = b_.key;
    if (p.op == WrOpcode::kRdmaRead) {
      FillPattern(bbuf + p.off, p.len, pattern_seed);
      Poison(abuf + p.off, bbuf + p.off, p.len);
    } else {
      FillPattern(abuf + p.off, p.len, pattern_seed);
      Poison(bbuf + p.off, abuf + p.off, p.len);
    }
    if (p.op == WrOpcode::kSend) {
      // The receive covers the rest of the slot, as an application posts
      // buffers of a fixed size larger than most messages.
      const uint64_t slot_end = uint64_t{p.slot + 1} * SlotStride(c_);
      nic::RecvWr rwr;
      rwr.wr_id = id;
      rwr.sg_list = {nic::Sge{b_.Va(p.off),
                              static_cast<uint32_t>(slot_end - p.off), b_.key}};
      absl::Status st = b_.nic.PostRecv(b_.qpn(), rwr);
      if (!st.ok()) Error("PostRecv ", id, ": ", st.ToString());
      expect_recv_.push_back(id);
    }
    r_.data_bytes += p.len;
  }
  pend_.push_back(p);
  absl::Status st = a_.nic.PostSend(a_.qpn(), wr);
  if (!st.ok()) {
    Error("PostSend ", id, ": ", st.ToString());
    pend_.back().active = false;
    free_slots_.push_back(p.slot);
    return;
  }
  ++outstanding_;
  ++r_.posted;
}

bool Driver::Poll() {
  WorkCompletion wc[32];
  size_t n;
  while ((n = b_.nic.PollCq(b_.cq, wc)) > 0)
    got_b_.insert(got_b_.end(), wc, wc + n);
  bool any = false;
  while ((n = a_.nic.PollCq(a_.cq, wc)) > 0) {
    got_a_.insert(got_a_.end(), wc, wc + n);
    any = true;
  }
  return any;
}

void Driver::CheckBytes(const Pending& p, uint64_t id, const uint8_t* got,
                        const uint8_t* want) {
  if (std::memcmp(got, want, p.len) == 0) return;
  size_t i = 0;
  while (got[i] == want[i]) ++i;
  Error("wr_id ", id, " (", nic::WrOpcodeName(p.op), ", ", p.len,
        " B): first wrong byte at ", i);
}

void Driver::OnRecvCompletion(const WorkCompletion& wc) {
  ++r_.recv_completions;
  if (expect_recv_.empty() || expect_recv_.front() != wc.wr_id) {
    Error("receive completion wr_id ", wc.wr_id, " out of order or extra");
    return;
  }
  expect_recv_.pop_front();
  Pending& p = pend_[wc.wr_id];
  if (wc.status != WcStatus::kSuccess) {
    Error("receive ", wc.wr_id, ": ", nic::WcStatusName(wc.status));
  }
  if (wc.opcode != WcOpcode::kRecv) {
    Error("receive ", wc.wr_id, ": opcode ", nic::WcOpcodeName(wc.opcode));
  }
  if (wc.byte_len != p.len) {
    Error("receive ", wc.wr_id, ": byte_len ", wc.byte_len, " != ", p.len);
  }
  if (wc.qp_num != b_.qpn() || wc.src_qp != a_.qpn()) {
    Error("receive ", wc.wr_id, ": qp_num/src_qp ", wc.qp_num, "/", wc.src_qp);
  }
  p.recv_done = true;
}

void Driver::OnSendCompletion(const WorkCompletion& wc) {
  ++r_.send_completions;
  const uint64_t id = wc.wr_id;
  if (id >= pend_.size() || !pend_[id].active) {
    Error("completion for wr_id ", id,
          id < pend_.size() ? " a second time" : " never posted");
    return;
  }
  Pending& p = pend_[id];
  p.active = false;
  --outstanding_;
  free_slots_.push_back(p.slot);
  if (wc.status != WcStatus::kSuccess) {
    Error("wr_id ", id, " (", nic::WrOpcodeName(p.op), ", ", p.len,
          " B): ", nic::WcStatusName(wc.status));
    return;
  }
  if (wc.opcode != ExpectedWcOpcode(p.op)) {
    Error("wr_id ", id, ": opcode ", nic::WcOpcodeName(wc.opcode));
  }
  if (wc.byte_len != p.len) {
    Error("wr_id ", id, ": byte_len ", wc.byte_len, " != ", p.len);
  }
  if (wc.qp_num != a_.qpn()) Error("wr_id ", id, ": qp_num ", wc.qp_num);
  const uint8_t* abuf = a_.buf.data() + p.off;
  const uint8_t* bbuf = b_.buf.data() + p.off;
  switch (p.op) {
    case WrOpcode::kRdmaRead:
      CheckBytes(p, id, abuf, bbuf);
      break;
    case WrOpcode::kSend:
      if (!p.recv_done) Error("SEND ", id, " completed before its receive");
      [[fallthrough]];
    case WrOpcode::kRdmaWrite:
      CheckBytes(p, id, bbuf, abuf);
      break;
    default: {
      uint64_t orig;
      std::memcpy(&orig, abuf, 8);
      if (orig != p.expect_orig) {
        Error("wr_id ", id, " (", nic::WrOpcodeName(p.op), "): original value ",
              orig, " != ", p.expect_orig);
      }
    }
  }
}

WorkloadResult Driver::Run() {
  simnet::Network& net = pair_.net();
  const nic::TimeNs start = net.now();
  const nic::TimeNs deadline = start + c_.deadline_ns;
  while (true) {
    bool posted = false;
    while (outstanding_ < c_.window && !free_slots_.empty() && MorePending() &&
           r_.error_count == 0) {
      PostOne();
      posted = true;
    }
    if (posted) {
      net.Kick(b_.node);
      net.Kick(a_.node);
    }
    if (outstanding_ == 0 && (!MorePending() || r_.error_count != 0)) break;
    const bool got = net.RunUntil([this] { return Poll(); }, deadline);
    for (const WorkCompletion& wc : got_b_) OnRecvCompletion(wc);
    got_b_.clear();
    for (const WorkCompletion& wc : got_a_) OnSendCompletion(wc);
    got_a_.clear();
    if (!got) {
      Error("deadline: ", outstanding_, " WRs outstanding at ", net.now(),
            " ns virtual");
      break;
    }
  }
  r_.finished = outstanding_ == 0 && !MorePending();
  r_.virtual_ns = net.now() - start;

  // Drain: whatever the network still carries (duplicates, late
  // retransmissions, ACKs) must not complete anything again.
  net.Run(net.now() + 50'000'000);
  Poll();
  for (const WorkCompletion& wc : got_b_) OnRecvCompletion(wc);
  for (const WorkCompletion& wc : got_a_) OnSendCompletion(wc);
  if (!expect_recv_.empty()) {
    Error(expect_recv_.size(), " receives never completed");
  }
  for (PairSide* s : {&a_, &b_}) {
    const nic::Qp* qp = s->nic.GetQp(s->qpn());
    if (qp == nullptr || qp->state() != nic::QpState::kRts) {
      Error("QP ", s->qpn(), " not in RTS at the end");
    }
  }
  if (r_.finished) {
    uint64_t counter, cas;
    std::memcpy(&counter, b_.buf.data() + AtomicBase(c_), 8);
    std::memcpy(&cas, b_.buf.data() + AtomicBase(c_) + kCasWord, 8);
    if (counter != model_counter_) {
      Error("FETCH_ADD counter ", counter, " != ", model_counter_);
    }
    if (cas != model_cas_) Error("CMP_SWAP word ", cas, " != ", model_cas_);
  }
  return r_;
}

}  // namespace

const char* WorkloadName(Workload w) {
  switch (w) {
    case Workload::kWrite:
      return "Write";
    case Workload::kRead:
      return "Read";
    case Workload::kSend:
      return "Send";
    case Workload::kAtomic:
      return "Atomic";
    case Workload::kMixed:
      return "Mixed";
  }
  return "?";
}

size_t WorkloadBufferSize(const WorkloadConfig& config) {
  return AtomicBase(config) + uint64_t{config.window} * 8 + 4096;
}

WorkloadResult RunWorkload(MatrixPair& pair, const WorkloadConfig& config) {
  return Driver(pair, config).Run();
}

}  // namespace rocemu::sim
