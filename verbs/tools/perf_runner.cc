#include "verbs/tools/perf_runner.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "verbs/server/json_writer.h"
#include "verbs/tools/perf_clock.h"
#include "verbs/tools/perf_pattern.h"
#include "verbs/tools/perf_stats.h"

namespace rocemu::verbs::perf {
namespace {

// The pong direction of the latency tests uses its own pattern, so a ping
// reflected back unchanged would be caught.
constexpr uint64_t kPongSalt = 0x5bd1e9955bd1e995ull;
// Empty CQ polls between looks at the clock and at the peer's connection.
constexpr uint32_t kIdleCheck = 4096;

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0;
}
}  // namespace

absl::Status PerfRunner::PostInitialRecvs() {
  if (options_.verb != Verb::kSend) return absl::OkStatus();
  for (uint32_t q = 0; q < options_.num_qps; ++q) {
    for (uint32_t k = 0; k < layout_.rx_depth; ++k) {
      if (int err = PostRecv(q, uint64_t{q} * layout_.rx_depth + k); err != 0) {
        return absl::ErrnoToStatus(err, "post_recv");
      }
    }
  }
  return absl::OkStatus();
}

int PerfRunner::PostRecv(uint32_t q, uint64_t slot) {
  rocemu_sge sge{reinterpret_cast<uint64_t>(rx_base() + slot * layout_.stride),
                 static_cast<uint32_t>(layout_.stride), mr_->lkey};
  rocemu_recv_wr wr{};
  wr.wr_id = (uint64_t{q} << 32) | slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  rocemu_recv_wr* bad = nullptr;
  return rocemu_post_recv(qps_[q].get(), &wr, &bad);
}

uint64_t PerfRunner::ops_seed() const {
  // Client-to-server messages carry the seed, the pongs the salted one.
  return options_.is_server() ? options_.seed ^ kPongSalt : options_.seed;
}

uint64_t PerfRunner::peer_rx_slot_addr(uint32_t q, uint64_t i) const {
  const uint64_t slot =
      options_.verify ? i % layout_.rx_slots : q % layout_.rx_slots;
  return peer_[q].rx_addr + slot * layout_.stride;
}

int PerfRunner::PostMessage(uint64_t i, uint64_t size) {
  const uint32_t q = static_cast<uint32_t>(i % options_.num_qps);
  uint8_t* local = tx_slot(i);
  rocemu_sge sge{reinterpret_cast<uint64_t>(local), static_cast<uint32_t>(size),
                 mr_->lkey};
  rocemu_send_wr wr{};
  wr.wr_id = i;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  wr.send_flags = ROCEMU_SEND_SIGNALED;
  switch (options_.verb) {
    case Verb::kWrite:
      wr.opcode = ROCEMU_WR_RDMA_WRITE;
      wr.wr.rdma.remote_addr = peer_rx_slot_addr(q, i);
      wr.wr.rdma.rkey = peer_[q].rkey;
      break;
    case Verb::kRead:
      wr.opcode = ROCEMU_WR_RDMA_READ;
      wr.wr.rdma.remote_addr = peer_rx_slot_addr(q, i);
      wr.wr.rdma.rkey = peer_[q].rkey;
      break;
    case Verb::kSend:
      wr.opcode = ROCEMU_WR_SEND;
      break;
    case Verb::kAtomic: {
      const uint64_t k = i / options_.num_qps;
      sge.length = 8;
      wr.wr.atomic.remote_addr = peer_[q].rx_addr + uint64_t{q} * 8;
      wr.wr.atomic.rkey = peer_[q].rkey;
      if (options_.atomic_op == AtomicOp::kFetchAndAdd) {
        wr.opcode = ROCEMU_WR_ATOMIC_FETCH_AND_ADD;
        wr.wr.atomic.compare_add = AtomicAddend(q);
      } else {
        wr.opcode = ROCEMU_WR_ATOMIC_CMP_AND_SWP;
        wr.wr.atomic.compare_add = CasValue(options_.seed, q, k);
        wr.wr.atomic.swap = CasValue(options_.seed, q, k + 1);
      }
      break;
    }
  }
  rocemu_send_wr* bad = nullptr;
  return rocemu_post_send(qps_[q].get(), &wr, &bad);
}

int64_t PerfRunner::CheckLocal(uint64_t i, uint64_t size) {
  const uint8_t* p = tx_slot(i);
  if (options_.verb == Verb::kRead) {
    return CheckMessage(options_.seed, i % layout_.rx_slots, p, size);
  }
  if (options_.verb == Verb::kAtomic) {
    const uint32_t q = static_cast<uint32_t>(i % options_.num_qps);
    const uint64_t k = i / options_.num_qps;
    const uint64_t want = options_.atomic_op == AtomicOp::kFetchAndAdd
                              ? FetchAddValue(options_.seed, q, k)
                              : CasValue(options_.seed, q, k);
    uint64_t got;
    std::memcpy(&got, p, 8);
    if (got != want) {
      for (int b = 0; b < 8; ++b) {
        if (((got ^ want) >> (8 * b)) & 0xff) return b;
      }
    }
  }
  return -1;
}

absl::Status PerfRunner::CompletionError(const rocemu_wc& wc,
                                         const char* what) {
  return absl::InternalError(absl::StrFormat(
      "%s completion error: %s (status %d, wr_id %u, qp 0x%x)", what,
      rocemu_wc_status_str(wc.status), wc.status, wc.wr_id, wc.qp_num));
}

absl::Status PerfRunner::OnSendWc(const rocemu_wc& wc, uint64_t size) {
  if (wc.status != ROCEMU_WC_SUCCESS) return CompletionError(wc, "send queue");
  const uint64_t i = wc.wr_id;
  --inflight_[i % options_.num_qps];
  if (options_.verify) {
    busy_[i % layout_.tx_slots] = 0;
    if (options_.mode == Mode::kBw) {
      const int64_t bad = CheckLocal(i, size);
      if (bad >= 0) {
        return absl::DataLossError(
            absl::StrFormat("message %u: first bad byte at offset %d", i, bad));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status PerfRunner::WaitSendCompletion(uint64_t size) {
  const int64_t deadline = MonotonicNs() + int64_t{timeout_ms()} * 1000000;
  for (uint32_t idle = 0;; ++idle) {
    const int k = rocemu_poll_cq(send_cq_.get(), 32, wcs_);
    if (k < 0) return absl::DataLossError("send CQ ring corrupted");
    for (int j = 0; j < k; ++j) {
      if (absl::Status s = OnSendWc(wcs_[j], size); !s.ok()) return s;
    }
    if (k > 0) return absl::OkStatus();
    Idle();
    if (idle % kIdleCheck == kIdleCheck - 1 && MonotonicNs() > deadline) {
      return absl::DeadlineExceededError("no send completion");
    }
  }
}

absl::Status PerfRunner::SyncSend(SyncKind kind, uint64_t value,
                                  const absl::Status& s, int64_t bad_offset) {
  SyncMsg m;
  m.kind = kind;
  m.value = value;
  m.ok = s.ok() ? 1 : 0;
  m.bad_offset = bad_offset;
  if (!s.ok()) {
    std::snprintf(m.what, sizeof(m.what), "%s",
                  std::string(s.message()).c_str());
  }
  return channel_->Send(m);
}

absl::Status PerfRunner::ClientBw(uint64_t size) {
  const PerfOptions& o = options_;
  const uint64_t n = o.iters;
  const bool rounds = o.verify && o.verb == Verb::kWrite;
  const uint64_t round_len = layout_.rx_slots;
  std::fill(inflight_.begin(), inflight_.end(), 0);
  std::fill(busy_.begin(), busy_.end(), 0);
  completed_ = 0;
  paused_ns_ = 0;
  uint64_t posted = 0, synced = 0;
  const uint64_t seed = ops_seed();
  const int64_t start = MonotonicNs();
  int64_t last_progress = start;
  uint32_t idle = 0;
  while (completed_ < n) {
    while (posted < n) {
      if (rounds && posted > 0 && posted % round_len == 0 && synced != posted) {
        if (completed_ < posted) break;
        // Every slot of the peer's region holds a message of this round:
        // let it check them before they are overwritten.
        const int64_t t = MonotonicNs();
        if (absl::Status s =
                SyncSend(SyncKind::kRound, posted, absl::OkStatus());
            !s.ok()) {
          return s;
        }
        if (absl::StatusOr<SyncMsg> r =
                channel_->Expect(SyncKind::kRound, timeout_ms());
            !r.ok()) {
          return r.status();
        }
        synced = posted;
        paused_ns_ += MonotonicNs() - t;
      }
      const uint32_t q = static_cast<uint32_t>(posted % o.num_qps);
      if (inflight_[q] >= o.tx_depth) break;
      const uint64_t slot = posted % layout_.tx_slots;
      if (o.verify) {
        if (busy_[slot]) break;
        if (o.verb == Verb::kWrite || o.verb == Verb::kSend) {
          FillMessage(seed, posted, tx_slot(posted), size);
        }
      }
      const int err = PostMessage(posted, size);
      if (err == ENOMEM) break;
      if (err != 0) return absl::ErrnoToStatus(err, "post_send");
      ++inflight_[q];
      if (o.verify) busy_[slot] = 1;
      ++posted;
    }
    const int k = rocemu_poll_cq(send_cq_.get(), 32, wcs_);
    if (k < 0) return absl::DataLossError("send CQ ring corrupted");
    if (k == 0) {
      Idle();
      if (++idle % kIdleCheck == 0) {
        const int64_t now = MonotonicNs();
        if (now - last_progress > int64_t{timeout_ms()} * 1000000) {
          return absl::DeadlineExceededError(
              absl::StrFormat("no completion for %u s (%u of %u done)",
                              o.timeout_s, completed_, n));
        }
        if (Readable(channel_->fd())) {
          // The peer only speaks now to report a failure.
          absl::StatusOr<SyncMsg> m = channel_->Expect(SyncKind::kEnd, 1000);
          return m.ok() ? absl::DataLossError("peer ended early") : m.status();
        }
      }
      continue;
    }
    const int64_t now = MonotonicNs();
    last_progress = now;
    for (int j = 0; j < k; ++j) {
      if (absl::Status s = OnSendWc(wcs_[j], size); !s.ok()) return s;
      times_[completed_++] = now - paused_ns_;
    }
  }
  const uint64_t window =
      std::max<uint64_t>(16, uint64_t{o.tx_depth} * o.num_qps);
  last_bw_ = ComputeBw(size, start, {times_.data(), completed_}, window);
  return absl::OkStatus();
}

absl::Status PerfRunner::WaitArrival(uint64_t i, uint64_t size) {
  const bool verify = options_.verify;
  // What the peer sent carries the other side's seed.
  const uint64_t seed = options_.seed ^ (options_.is_server() ? 0 : kPongSalt);
  const int64_t deadline = MonotonicNs() + int64_t{timeout_ms()} * 1000000;
  if (options_.verb == Verb::kWrite) {
    uint8_t* rx = rx_base();
    const uint8_t want = Marker(i);
    for (uint32_t spin = 0;
         __atomic_load_n(&rx[size - 1], __ATOMIC_ACQUIRE) != want; ++spin) {
      IdleMemoryPoll(spin);
      if (spin % kIdleCheck == kIdleCheck - 1 && MonotonicNs() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrFormat("message %u did not arrive", i));
      }
    }
    if (!verify) return absl::OkStatus();
    // The daemon copies a single-packet payload with memcpy, in no
    // particular byte order: the marker may land before the rest.
    const int64_t settle = MonotonicNs() + 1000000000;
    for (;;) {
      const int64_t bad = CheckMessage(seed, i, rx, size);
      if (bad < 0) return absl::OkStatus();
      if (MonotonicNs() > settle) {
        return absl::DataLossError(
            absl::StrFormat("message %u: first bad byte at offset %d", i, bad));
      }
    }
  }
  // SEND: the next receive completion.
  for (uint32_t spin = 0;; ++spin) {
    const int k = rocemu_poll_cq(recv_cq_.get(), 1, wcs_);
    if (k < 0) return absl::DataLossError("receive CQ ring corrupted");
    if (k == 0) {
      Idle();
      if (spin % kIdleCheck == kIdleCheck - 1 && MonotonicNs() > deadline) {
        return absl::DeadlineExceededError(
            absl::StrFormat("message %u did not arrive", i));
      }
      continue;
    }
    const rocemu_wc& wc = wcs_[0];
    if (wc.status != ROCEMU_WC_SUCCESS) return CompletionError(wc, "receive");
    const uint32_t q = static_cast<uint32_t>(wc.wr_id >> 32);
    const uint64_t slot = wc.wr_id & 0xffffffffu;
    if (q >= options_.num_qps || slot >= layout_.rx_slots) {
      return absl::DataLossError("receive completion with a foreign wr_id");
    }
    if (wc.byte_len != size) {
      return absl::DataLossError(absl::StrFormat(
          "message %u: %u bytes received, %u sent", i, wc.byte_len, size));
    }
    if (verify) {
      const int64_t bad =
          CheckMessage(seed, i, rx_base() + slot * layout_.stride, size);
      if (bad >= 0) {
        return absl::DataLossError(
            absl::StrFormat("message %u: first bad byte at offset %d", i, bad));
      }
    }
    ++recv_count_[q];
    if (int err = PostRecv(q, slot); err != 0) {
      return absl::ErrnoToStatus(err, "post_recv");
    }
    return absl::OkStatus();
  }
}

absl::Status PerfRunner::PingPongLat(uint64_t size, bool client,
                                     uint64_t* done) {
  const PerfOptions& o = options_;
  const uint64_t seed = ops_seed();
  std::fill(inflight_.begin(), inflight_.end(), 0);
  std::fill(busy_.begin(), busy_.end(), 0);
  *done = 0;
  for (uint64_t i = 0; i < o.iters; ++i) {
    if (!client) {
      if (absl::Status s = WaitArrival(i, size); !s.ok()) return s;
    }
    const uint32_t q = static_cast<uint32_t>(i % o.num_qps);
    const uint64_t slot = i % layout_.tx_slots;
    while (inflight_[q] >= o.tx_depth || (o.verify && busy_[slot])) {
      if (absl::Status s = WaitSendCompletion(size); !s.ok()) return s;
    }
    if (o.verify) {
      FillMessage(seed, i, tx_slot(i), size);
    } else if (o.verb == Verb::kWrite) {
      tx_slot(i)[size - 1] = Marker(i);
    }
    const int64_t t0 = MonotonicNs();
    if (int err = PostMessage(i, size); err != 0) {
      return absl::ErrnoToStatus(err, "post_send");
    }
    ++inflight_[q];
    if (o.verify) busy_[slot] = 1;
    if (client) {
      if (absl::Status s = WaitArrival(i, size); !s.ok()) return s;
      // Half the round trip, as perftest reports one-way latency.
      times_[i] = (MonotonicNs() - t0) / 2;
    }
    *done = i + 1;
  }
  // Leave no completion behind for the next size.
  for (uint32_t q = 0; q < o.num_qps; ++q) {
    while (inflight_[q] > 0) {
      if (absl::Status s = WaitSendCompletion(size); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status PerfRunner::ClientLat(uint64_t size) {
  const PerfOptions& o = options_;
  completed_ = 0;
  if (o.verb == Verb::kWrite || o.verb == Verb::kSend) {
    absl::Status s = PingPongLat(size, true, &completed_);
    if (!s.ok()) return s;
  } else {
    std::fill(inflight_.begin(), inflight_.end(), 0);
    for (uint64_t i = 0; i < o.iters; ++i) {
      const int64_t t0 = MonotonicNs();
      if (int err = PostMessage(i, size); err != 0) {
        return absl::ErrnoToStatus(err, "post_send");
      }
      const int64_t deadline = t0 + int64_t{timeout_ms()} * 1000000;
      int k;
      for (uint32_t spin = 0;
           (k = rocemu_poll_cq(send_cq_.get(), 1, wcs_)) == 0; ++spin) {
        Idle();
        if (spin % kIdleCheck == kIdleCheck - 1 && MonotonicNs() > deadline) {
          return absl::DeadlineExceededError(
              absl::StrFormat("message %u did not complete", i));
        }
      }
      times_[i] = MonotonicNs() - t0;
      if (k < 0) return absl::DataLossError("send CQ ring corrupted");
      if (wcs_[0].status != ROCEMU_WC_SUCCESS) {
        return CompletionError(wcs_[0], "send queue");
      }
      if (wcs_[0].wr_id != i) {
        return absl::DataLossError(absl::StrFormat(
            "completion for wr_id %u, expected %u", wcs_[0].wr_id, i));
      }
      if (o.verify) {
        const int64_t bad = CheckLocal(i, size);
        if (bad >= 0) {
          return absl::DataLossError(absl::StrFormat(
              "message %u: first bad byte at offset %d", i, bad));
        }
      }
      completed_ = i + 1;
    }
  }
  last_lat_ = ComputeLat(size, {times_.data(), completed_});
  return absl::OkStatus();
}

absl::Status PerfRunner::ServerSendBw(uint64_t size, uint64_t* received) {
  const PerfOptions& o = options_;
  std::fill(recv_count_.begin(), recv_count_.end(), 0);
  *received = 0;
  int64_t last_progress = MonotonicNs();
  uint32_t idle = 0;
  while (*received < o.iters) {
    const int k = rocemu_poll_cq(recv_cq_.get(), 32, wcs_);
    if (k < 0) return absl::DataLossError("receive CQ ring corrupted");
    if (k == 0) {
      Idle();
      if (++idle % kIdleCheck == 0) {
        if (MonotonicNs() - last_progress > int64_t{timeout_ms()} * 1000000) {
          return absl::DeadlineExceededError(
              absl::StrFormat("no message for %u s (%u of %u received)",
                              o.timeout_s, *received, o.iters));
        }
        if (!have_end_ && Readable(channel_->fd())) {
          // The client's end (or its failure) can overtake the last
          // receive completions on their way through the daemon: keep it
          // and go on polling, bounded by the timeout above.
          absl::StatusOr<SyncMsg> m = channel_->Expect(SyncKind::kEnd, 1000);
          if (!m.ok()) return m.status();
          end_msg_ = *m;
          have_end_ = true;
        }
      }
      continue;
    }
    last_progress = MonotonicNs();
    for (int j = 0; j < k; ++j) {
      const rocemu_wc& wc = wcs_[j];
      if (wc.status != ROCEMU_WC_SUCCESS) return CompletionError(wc, "receive");
      const uint32_t q = static_cast<uint32_t>(wc.wr_id >> 32);
      const uint64_t slot = wc.wr_id & 0xffffffffu;
      if (q >= o.num_qps || slot >= layout_.rx_slots) {
        return absl::DataLossError("receive completion with a foreign wr_id");
      }
      const uint64_t i = recv_count_[q]++ * o.num_qps + q;
      if (wc.byte_len != size) {
        return absl::DataLossError(absl::StrFormat(
            "message %u: %u bytes received, %u sent", i, wc.byte_len, size));
      }
      if (o.verify) {
        const int64_t bad =
            CheckMessage(o.seed, i, rx_base() + slot * layout_.stride, size);
        if (bad >= 0) {
          return absl::DataLossError(absl::StrFormat(
              "message %u: first bad byte at offset %d", i, bad));
        }
      }
      if (int err = PostRecv(q, slot); err != 0) {
        return absl::ErrnoToStatus(err, "post_recv");
      }
      ++*received;
    }
  }
  return absl::OkStatus();
}

absl::Status PerfRunner::CheckRound(uint64_t size, uint64_t first,
                                    uint64_t end) {
  for (uint64_t i = first; i < end; ++i) {
    const int64_t bad =
        CheckMessage(options_.seed, i,
                     rx_base() + (i % layout_.rx_slots) * layout_.stride, size);
    if (bad >= 0) {
      return absl::DataLossError(
          absl::StrFormat("message %u: first bad byte at offset %d", i, bad));
    }
  }
  verified_ += end - first;
  return absl::OkStatus();
}

void PerfRunner::FillReadSource(uint64_t size) {
  for (uint64_t s = 0; s < layout_.rx_slots; ++s) {
    FillMessage(options_.seed, s, rx_base() + s * layout_.stride, size);
  }
}

void PerfRunner::PrepareAtomicWords() {
  for (uint32_t q = 0; q < options_.num_qps; ++q) {
    const uint64_t v = AtomicInitial(options_.seed, q);
    std::memcpy(rx_base() + uint64_t{q} * 8, &v, 8);
  }
}

absl::Status PerfRunner::CheckAtomicWords() {
  for (uint32_t q = 0; q < options_.num_qps; ++q) {
    const uint64_t k = messages_on_qp(q);
    const uint64_t want = options_.atomic_op == AtomicOp::kFetchAndAdd
                              ? FetchAddValue(options_.seed, q, k)
                              : CasValue(options_.seed, q, k);
    uint64_t got;
    std::memcpy(&got, rx_base() + uint64_t{q} * 8, 8);
    if (got != want) {
      return absl::DataLossError(absl::StrFormat(
          "atomic word of QP %u holds 0x%x after %u operations, expected "
          "0x%x",
          q, got, k, want));
    }
    verified_ += k;
  }
  return absl::OkStatus();
}

absl::Status PerfRunner::ServerSize(uint64_t size) {
  const PerfOptions& o = options_;
  verified_ = 0;
  switch (o.verb) {
    case Verb::kWrite:
      std::memset(rx_base(), 0, layout_.rx_len);
      break;
    case Verb::kRead:
      FillReadSource(size);
      break;
    case Verb::kAtomic:
      PrepareAtomicWords();
      break;
    case Verb::kSend:
      break;
  }
  if (absl::Status s = SyncSend(SyncKind::kReady, 0, absl::OkStatus());
      !s.ok()) {
    return s;
  }
  uint64_t counted = 0;
  absl::Status s;
  if (o.mode == Mode::kLat &&
      (o.verb == Verb::kWrite || o.verb == Verb::kSend)) {
    s = PingPongLat(size, false, &counted);
  } else if (o.mode == Mode::kBw && o.verb == Verb::kSend) {
    s = ServerSendBw(size, &counted);
  }
  if (!s.ok()) {
    SyncSend(SyncKind::kEnd, counted, s).IgnoreError();
    return s;
  }
  const uint64_t round_len = layout_.rx_slots;
  const bool write_rounds =
      o.verify && o.verb == Verb::kWrite && o.mode == Mode::kBw;
  for (;;) {
    SyncMsg m = end_msg_;
    if (have_end_) {
      have_end_ = false;
    } else if (absl::Status r = channel_->Recv(&m, -1); !r.ok()) {
      return r;
    }
    m.what[sizeof(m.what) - 1] = '\0';
    if (m.magic != kExchangeMagic) {
      return absl::DataLossError("bad message from the client");
    }
    if (m.ok == 0)
      return absl::AbortedError(absl::StrCat("client failed: ", m.what));
    if (m.kind == SyncKind::kRound && write_rounds && m.value >= round_len) {
      s = CheckRound(size, m.value - round_len, m.value);
      if (absl::Status w = SyncSend(SyncKind::kRound, m.value, s); !w.ok()) {
        return w;
      }
      if (!s.ok()) return s;
      continue;
    }
    if (m.kind != SyncKind::kEnd) {
      return absl::DataLossError("unexpected message from the client");
    }
    if (m.value != o.iters) {
      s = absl::DataLossError(absl::StrFormat(
          "the client completed %u of %u iterations", m.value, o.iters));
    } else if (write_rounds) {
      s = CheckRound(size, (o.iters - 1) / round_len * round_len, o.iters);
    } else if (o.verify && o.verb == Verb::kAtomic) {
      s = CheckAtomicWords();
    }
    if (o.verb == Verb::kSend ||
        (o.mode == Mode::kLat && o.verb == Verb::kWrite)) {
      // What this side received itself.
    } else if (write_rounds || (o.verify && o.verb == Verb::kAtomic)) {
      counted = verified_;
    } else {
      counted = m.value;
    }
    if (absl::Status w = SyncSend(SyncKind::kEnd, counted, s); !w.ok()) {
      return w;
    }
    if (!s.ok()) return s;
    break;
  }
  if (o.json) {
    const nlohmann::ordered_json line = {{"role", "server"},
                                         {"test", TestName(o.verb, o.mode)},
                                         {"bytes", size},
                                         {"iterations", counted},
                                         {"iterations_asked", o.iters},
                                         {"verify", o.verify},
                                         {"verified", o.verify}};
    std::printf("%s\n", verbs::DumpJson(line).c_str());
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

absl::Status PerfRunner::RunSize(uint64_t size) {
  if (options_.is_server()) return ServerSize(size);
  const PerfOptions& o = options_;
  if (o.mode == Mode::kLat && o.verb == Verb::kWrite) {
    std::memset(rx_base(), 0, layout_.rx_len);
  }
  if (absl::StatusOr<SyncMsg> r =
          channel_->Expect(SyncKind::kReady, timeout_ms());
      !r.ok()) {
    return r.status();
  }
  absl::Status s = o.mode == Mode::kBw ? ClientBw(size) : ClientLat(size);
  if (!s.ok()) {
    SyncSend(SyncKind::kEnd, completed_, s).IgnoreError();
    return s;
  }
  if (absl::Status w = SyncSend(SyncKind::kEnd, completed_, absl::OkStatus());
      !w.ok()) {
    return w;
  }
  absl::StatusOr<SyncMsg> end = channel_->Expect(SyncKind::kEnd, timeout_ms());
  if (!end.ok()) return end.status();
  JsonContext jc{TestName(o.verb, o.mode), &options_, end->value, o.verify};
  std::string line;
  if (o.mode == Mode::kBw) {
    line = o.json ? BwJson(jc, last_bw_) : BwLine(last_bw_);
  } else {
    line = o.json ? LatJson(jc, last_lat_) : LatLine(last_lat_);
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  return absl::OkStatus();
}

absl::Status PerfRunner::Run() {
  if (absl::Status s = Connect(); !s.ok()) return s;
  const PerfOptions& o = options_;
  if (!o.json) {
    std::printf(
        "# rocemu-perf %s%s%s: %s, %u QP(s), tx-depth %u, MTU %u, memory %s, "
        "verify %s\n",
        TestName(o.verb, o.mode).c_str(), o.verb == Verb::kAtomic ? " " : "",
        o.verb == Verb::kAtomic ? AtomicOpName(o.atomic_op) : "",
        o.is_server() ? "server" : "client", o.num_qps, o.tx_depth, o.mtu,
        o.memory == Memory::kShm ? "shm" : "malloc", o.verify ? "on" : "off");
    if (!o.is_server()) {
      std::printf("%s\n",
                  (o.mode == Mode::kBw ? BwHeader() : LatHeader()).c_str());
    }
    std::fflush(stdout);
  }
  for (uint64_t size : o.sizes) {
    if (absl::Status s = RunSize(size); !s.ok()) {
      return absl::Status(
          s.code(), absl::StrCat(TestName(o.verb, o.mode), " size ", size, ": ",
                                 s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace rocemu::verbs::perf
