// Stream rsockets (SOCK_STREAM over RC) in the drop-in librdmacm.so.1,
// built on the public rdma_cm and verbs calls the library already offers.
//
// The protocol is rdma-core's (librdmacm/rsocket.c), so that our rsockets
// talk to theirs: the connection's private data announces each side's
// receive credits, a registered "target SGL" array and the first half of
// its receive buffer; data goes as RDMA WRITE WITH IMMEDIATE into the
// peer's buffer, the immediate saying what it is (op in bits 31..29); the
// receiver hands back each half of its buffer, and credits, by writing an
// SGE into the sender's target SGL, again with an immediate.
//
// Each rsocket owns an event channel; the socket's number is that
// channel's fd (as rdma-core's is), so rpoll can wait on it and on the
// socket's completion channel without a helper thread.
#ifndef ROCEMU_VERBS_RDMACM_RSOCKET_H_
#define ROCEMU_VERBS_RDMACM_RSOCKET_H_

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <cerrno>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

namespace rocemu::rdmacm::rs {

// --- the wire (facts from rdma-core's rsocket.c) ----------------------------

inline constexpr uint8_t kConnVersion = 1;
inline constexpr uint8_t kConnFlagNet = 1 << 0;    // sender is big-endian
inline constexpr uint8_t kConnFlagIomap = 1 << 1;  // target SGL has iomaps

// An SGE as rsockets exchange it: in the connection data big-endian; in
// SGL updates in the writer's byte order (kConnFlagNet tells the peer).
struct WireSge {
  uint64_t addr;
  uint32_t key;
  uint32_t length;
};
static_assert(sizeof(WireSge) == 16);

struct ConnData {
  uint8_t version;
  uint8_t flags;
  uint16_t credits;  // big-endian: receives posted
  uint8_t reserved[3];
  uint8_t target_iomap_size;  // scaled, see rdma-core's rs_value_to_scale
  WireSge target_sgl;         // length: entries
  WireSge data_buf;           // first half of the receive buffer
};
static_assert(sizeof(ConnData) == 40);

// An entry of the iomap table that follows the target SGL: where the
// peer's riomap'ed buffer `offset` lives.
struct IomapEntry {
  uint64_t offset;
  WireSge sge;
};
static_assert(sizeof(IomapEntry) == 24);

// rdma-core's 8-bit encoding of table sizes: up to 128 as is, beyond that
// a flag and value >> 8 (rs_value_to_scale / rs_scale_to_value).
inline constexpr int ValueToScale(int value, int bits) {
  return value <= (1 << (bits - 1)) ? value
                                    : (1 << (bits - 1)) | (value >> bits);
}
inline constexpr int ScaleToValue(int value, int bits) {
  return value <= (1 << (bits - 1)) ? value
                                    : (value & ~(1 << (bits - 1))) << bits;
}

// Immediate data: op in the top 3 bits, the rest is a length (DATA) or
// the receive sequence number the peer may send up to (SGL, CTRL carry a
// control code instead).
enum Op : uint32_t {
  kOpData = 0,
  kOpWrite = 2,  // riowrite's plain writes: never on the wire as an imm
  kOpSgl = 4,
  kOpIomapSgl = 6,
  kOpCtrl = 7,
};
inline constexpr uint32_t Msg(uint32_t op, uint32_t data) {
  return (op << 29) | (data & 0x1FFFFFFF);
}
inline constexpr uint32_t MsgOp(uint32_t msg) { return msg >> 29; }
inline constexpr uint32_t MsgData(uint32_t msg) { return msg & 0x1FFFFFFF; }

enum Ctrl : uint32_t {
  kCtrlDisconnect = 0,
  kCtrlKeepalive = 1,
  kCtrlShutdown = 2,
};

// Two entries in the target SGL: each names half of the receive buffer.
inline constexpr int kSglSize = 2;
// Control messages (SGL updates, CTRL) in flight at once; send queue
// entries kept back for them.
inline constexpr unsigned kCtrlSlots = 4;
inline constexpr uint32_t kMaxCtrlMsg = sizeof(WireSge);
// rsend needs this much send buffer free before it writes.
inline constexpr uint32_t kSendLowWater = 2048;
inline constexpr uint32_t kFirstTransfer = 2048;
inline constexpr uint32_t kMaxTransfer = 65536;
inline constexpr uint16_t kQpMinSize = 16;
inline constexpr uint16_t kQpMaxSize = 0xFFFE;
// rdma-core's defaults (its rsocket configuration files can change them
// there; here they are fixed).
inline constexpr uint16_t kDefaultInline = 64;
inline constexpr uint16_t kDefaultSqSize = 384;
inline constexpr uint16_t kDefaultRqSize = 384;
inline constexpr uint32_t kDefaultMem = 1 << 17;

// The longest a waiter sleeps before it looks again: two threads waiting
// on one socket share its completion channel, and the one that takes the
// event may leave the other asleep.
inline constexpr int kMaxSleepMs = 100;

// How long a waiter spins (looking again at once) before it arms the CQ
// and sleeps: the answer is often a few microseconds away, and sleeping
// costs more than that.
inline constexpr int64_t kWaitSpinNs = 20000;

inline int SetErrno(int err) {
  errno = err;
  return -1;
}

// --- one socket -------------------------------------------------------------

enum class State {
  kInit,
  kBound,
  kListening,
  kResolvingAddr,
  kResolvingRoute,
  kConnecting,
  kConnected,  // see readable / writable for the halves still open
  kConnectError,
  kDisconnected,  // the connection is over, cleanly
  kError,         // reset: the peer or the transport failed
};

// Receive/send buffers registered with the socket's PD, page-aligned.
struct Buffer {
  uint8_t* data = nullptr;
  size_t size = 0;
  ibv_mr* mr = nullptr;
  ~Buffer() { Reset(); }
  int Alloc(ibv_pd* pd, size_t bytes, int access);
  void Reset();
};

struct RSocket {
  std::mutex mu;
  int fd = -1;
  rdma_event_channel* channel = nullptr;
  rdma_cm_id* id = nullptr;
  State state = State::kInit;
  bool readable = false;
  bool writable = false;
  int err = 0;                   // SO_ERROR / the reason a call fails
  bool established = false;      // an accepted socket's RTU came
  bool cm_disconnected = false;  // the CM reported the connection gone
  bool nonblocking = false;
  int fd_flags = 0;                                   // rfcntl F_GETFL
  uint64_t so_opts = 0, tcp_opts = 0, ipv6_opts = 0;  // booleans set

  // Sizes (settable until the endpoint exists; an accepted socket takes
  // its listener's).
  uint32_t sbuf_size = kDefaultMem;
  uint32_t rbuf_size = kDefaultMem;
  uint16_t sq_size = kDefaultSqSize;
  uint16_t rq_size = kDefaultRqSize;
  uint16_t sq_inline = kDefaultInline;

  // Listener: connection requests not yet accepted.
  std::deque<rdma_cm_event*> requests;

  // Endpoint.
  ibv_comp_channel* cq_channel = nullptr;
  ibv_cq* cq = nullptr;
  bool cq_armed = false;
  Buffer sbuf;    // sbuf_size of data, then kCtrlSlots control messages
  Buffer rbuf;    // the peer writes data here
  Buffer target;  // kSglSize WireSge the peer writes SGL updates into

  // Flow control, as rdma-core keeps it.
  unsigned ctrl_seqno = 0;
  unsigned ctrl_max_seqno = kCtrlSlots;
  uint16_t sseq_no = 0;    // data messages sent
  uint16_t sseq_comp = 0;  // ... may send while sseq_no != sseq_comp
  uint16_t rseq_no = 0;    // data messages consumed
  uint16_t rseq_comp = 0;  // credits go back when rseq_no reaches it
  int sqe_avail = 0;
  uint32_t sbuf_bytes_avail = 0;
  uint32_t sbuf_head = 0;  // next copy goes to sbuf.data + sbuf_head

  WireSge remote_sgl{};  // the peer's target SGL
  int remote_sge = 0;    // its entry our next SGL update goes to
  bool swap_sgl = false;
  int target_sge = 0;  // our target SGL entry being written into

  uint32_t rbuf_bytes_avail = 0;  // consumed, not yet handed back
  uint32_t rbuf_free_offset = 0;  // the next half to hand back
  uint32_t rbuf_offset = 0;       // where the next unread byte is
  // riomap: the peer's iomap table (entries in `length`), and our maps.
  uint16_t target_iomap_size = 0;  // entries the peer may write (ours)
  WireSge remote_iomap{};
  std::vector<bool> remote_slots;  // which of the peer's entries we use
  struct IoMap {
    uint64_t offset;
    ibv_mr* mr;
    int index;  // entry in the peer's table; -1: local only
  };
  std::vector<IoMap> iomaps;
  std::deque<IoMap> iomap_queue;  // not yet written to the peer

  // Received data messages' lengths, a ring of rq_size + 1.
  std::vector<uint32_t> rmsg;
  int rmsg_head = 0, rmsg_tail = 0;

  volatile IomapEntry* TargetIomap() {
    return reinterpret_cast<volatile IomapEntry*>(target.data +
                                                  sizeof(WireSge) * kSglSize);
  }
  volatile WireSge* TargetSgl() {
    return reinterpret_cast<volatile WireSge*>(target.data);
  }
  bool HaveData() const { return rmsg_head != rmsg_tail; }
  bool Connected() const { return state == State::kConnected; }
};

// --- the registry and shared pieces (rsocket.cc)
// ------------------------------

// The socket numbered `fd`, or nullptr (then errno = EBADF). Sockets live
// until rclose; using one while another thread closes it is the
// application's error, as with file descriptors.
RSocket* Find(int fd);

// Progress on the CM events waiting on the socket's channel (under
// rs->mu; never blocks).
void ProcessCmEvents(RSocket* rs);
// Drives a connect in progress; blocks if `block`. 0 once connected, else
// -1 with errno (EINPROGRESS while it goes on).
int DriveConnect(RSocket* rs, bool block);

// --- the data path (rsocket_data.cc) ----------------------------------------

// Polls the CQ, hands back credits, consumes CM events; never blocks.
void Progress(RSocket* rs);
// Takes what the CQ holds (data, credits, control messages).
void PollCq(RSocket* rs);
// The socket fails (reset): further sends and receives see `err`.
void Fail(RSocket* rs, int err);
bool CanSend(RSocket* rs);
bool CtrlAvail(const RSocket* rs);
bool AllSendsDone(const RSocket* rs);
// Waits (rs->mu released while asleep) until pred(rs) holds; with
// `nonblock` fails at once (EAGAIN) instead. `timeout_ms` >= 0 bounds the
// wait (then ETIMEDOUT). 0 or -1 with errno. The predicates themselves
// say when a socket that left the connected state stops the wait.
int WaitFor(RSocket* rs, std::unique_lock<std::mutex>& lock, bool nonblock,
            int timeout_ms, bool (*pred)(RSocket*));
int PostCtrl(RSocket* rs, uint32_t ctrl);
// Arms the CQ and lists the fds a waiter sleeps on.
void WaitFds(RSocket* rs, int* fds, int* n);
// After a wakeup: takes the completion channel's events.
void DrainCqEvents(RSocket* rs);
// Creates CQ, QP, buffers and receives for a socket whose id has a route.
int CreateEndpoint(RSocket* rs);
void FormatConnData(RSocket* rs, ConnData* out);
// Takes the peer's connection data; false when it is not rsockets' v1.
bool SaveConnData(RSocket* rs, const void* data, size_t len);
void DestroyEndpoint(RSocket* rs);
// Posts an RDMA WRITE (WITH IMM when `imm`), wr_id = msg.
int PostWrite(RSocket* rs, ibv_sge* sgl, int nsge, uint32_t msg, bool imm,
              int flags, uint64_t addr, uint32_t rkey);
// `len` bytes of `buf` ready to go: inline, or copied into the send ring
// (two SGEs when it wraps). Returns the SGE count.
int Stage(RSocket* rs, const uint8_t* buf, uint32_t len, ibv_sge sge[2],
          int* send_flags);
bool Nonblocking(const RSocket* rs, int flags);
// A socket still connecting makes progress first; -1 (EAGAIN) until it
// is connected.
int FinishConnect(RSocket* rs);
bool SendWaitDone(RSocket* rs);

// rdma-core's transfer sizing for one message of a send: `*olen` starts at
// kFirstTransfer and doubles, up to kMaxTransfer, while more than it is
// `left`; the last message takes what is left.
inline uint32_t NextTransfer(uint32_t* olen, uint64_t left) {
  if (*olen >= left) return uint32_t(left);
  const uint32_t xfer = *olen;
  if (*olen < kMaxTransfer) *olen <<= 1;
  return xfer;
}

// --- riomap (rsocket_iomap.cc) ----------------------------------------------

// Writes the maps riomap queued into the peer's iomap table.
int SendIomaps(RSocket* rs, std::unique_lock<std::mutex>& lock, bool nonblock);
void FreeIomaps(RSocket* rs);

}  // namespace rocemu::rdmacm::rs

#endif  // ROCEMU_VERBS_RDMACM_RSOCKET_H_
