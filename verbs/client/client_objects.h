// The library's side of each verbs object (private to the library and to
// the drop-in libibverbs built on it). The C API in rocemu_verbs.h hands
// out pointers to these; the drop-in embeds its ibv_* structs beside them.
//
// Data-path queues (SQ, RQ, SRQ, CQ rings) each carry a spin lock so that
// several application threads may post to one QP or poll one CQ, as
// libibverbs allows; one thread pays one uncontended atomic exchange.
#ifndef ROCEMU_VERBS_CLIENT_CLIENT_OBJECTS_H_
#define ROCEMU_VERBS_CLIENT_CLIENT_OBJECTS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "verbs/client/spin_lock.h"
#include "verbs/rocemu_verbs.h"
#include "verbs/wire/doorbell.h"
#include "verbs/wire/ring_slots.h"
#include "verbs/wire/shm_ring.h"
#include "verbs/wire/wire_protocol.h"

struct rocemu_context {
  int fd = -1;
  uint32_t seq = 0;
  uint32_t client_id = 0;
  char device_name[sizeof(rocemu::verbs::wire::HelloResp::device_name)] = {};
  std::mutex mu;  // control path only
  std::vector<rocemu_buf*> bufs;
  // Async events: the daemon's ring and the eventfd it signals.
  rocemu::verbs::ShmRing async_ring;
  int async_fd = -1;
  std::mutex async_mu;  // one consumer of the ring at a time
  // What event elements name (under mu).
  absl::flat_hash_map<uint32_t, rocemu_qp*> qps;
  absl::flat_hash_map<uint32_t, rocemu_cq*> cqs;
  absl::flat_hash_map<uint32_t, rocemu_srq*> srqs;
  // Set once the daemon is gone (its socket hung up): every call fails
  // with EIO from then on and polls report an error instead of spinning.
  std::atomic<bool> dead{false};
  // The outstanding work requests were flushed (client_flush.h; under mu).
  bool flushed = false;
  // Doorbells (verbs/wire/doorbell.h): the ring this client rings (any thread,
  // under doorbell_lock), the daemon's wake page, this client's wake fd.
  rocemu::verbs::ShmRing doorbells;
  rocemu::verbs::SpinLock doorbell_lock;
  const rocemu::verbs::WakePage* wake = nullptr;
  size_t wake_len = 0;
  int wake_fd = -1;
};

struct rocemu_device {
  std::string path;
  char name[sizeof(rocemu::verbs::wire::HelloResp::device_name)];
};

struct rocemu_pd {
  rocemu_context* ctx;
  uint32_t handle;
};

struct rocemu_comp_channel {
  rocemu_context* ctx;
  int fd;
  std::vector<rocemu_cq*> cqs;
};

struct rocemu_cq {
  rocemu_context* ctx;
  uint32_t handle;
  void* cq_context;
  rocemu_comp_channel* channel;
  rocemu::verbs::ShmRing ring;
  uint64_t seen_signals = 0;
  uint64_t events = 0;  // delivered by get_cq_event
  uint64_t acked = 0;
  rocemu::verbs::SpinLock lock;  // consumers of `ring`
  // Consecutive empty polls; every few thousand the daemon's liveness is
  // checked (no syscall on the common path).
  uint32_t empty_polls = 0;
  // The daemon died: completions the library made for the work requests
  // it left outstanding (client_flush.h), polled after the ring's. Filled
  // once, before flush_ready; then read under `lock`.
  std::vector<rocemu::verbs::CqeSlot> flushes;
  size_t flushes_taken = 0;
  std::atomic<bool> flush_ready{false};
};

struct rocemu_qp {
  rocemu_context* ctx;
  rocemu_pd* pd;
  uint32_t qpn;
  int qp_type;
  std::atomic<int> state;
  rocemu_qp_cap cap;
  rocemu::verbs::ShmRing sq;
  rocemu::verbs::ShmRing rq;
  rocemu_srq* srq;
  rocemu_cq* send_cq;
  rocemu_cq* recv_cq;
  rocemu::verbs::SpinLock sq_lock;
  rocemu::verbs::SpinLock rq_lock;
  // The wr_id of every send request by ring index, for twice the ring's
  // capacity: a request may still be in the RNIC after its slot was
  // reused, and one the daemon never completed is flushed by the library
  // if the daemon dies (client_flush.h). One store per post.
  std::unique_ptr<uint64_t[]> sq_wr_ids;
  uint64_t sq_wr_mask = 0;
  void* owner = nullptr;  // the drop-in libibverbs' record, if any
};

struct rocemu_ah {
  rocemu_pd* pd;
  uint32_t handle;
};

struct rocemu_xrcd {
  rocemu_context* ctx;
  uint32_t handle;
};

struct rocemu_srq {
  rocemu_context* ctx;
  rocemu_pd* pd;
  uint32_t handle;
  uint32_t srqn = 0;  // XRC SRQs: what an XRCETH names it by
  bool xrc = false;
  bool tm = false;  // a tag-matching SRQ (rocemu_post_srq_op)
  void* srq_context;
  uint32_t max_sge;
  uint32_t max_wr;
  rocemu::verbs::ShmRing ring;
  rocemu::verbs::SpinLock lock;
};

namespace rocemu::verbs::client {

// Buffer bookkeeping kept beside the public struct.
struct BufImpl {
  rocemu_buf pub;
  int fd;
  size_t map_len;
};
inline BufImpl* ImplOf(rocemu_buf* b) { return reinterpret_cast<BufImpl*>(b); }

template <typename T>
T* Fail(int err) {
  errno = err;
  return nullptr;
}

}  // namespace rocemu::verbs::client

#endif  // ROCEMU_VERBS_CLIENT_CLIENT_OBJECTS_H_
