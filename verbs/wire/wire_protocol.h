// The control protocol between the verbs library and the daemon's session
// server: one SOCK_SEQPACKET datagram per message, each a fixed-layout
// struct behind a MsgHeader. File descriptors (memory buffers, rings,
// eventfds) ride along as SCM_RIGHTS.
//
// Every field has a fixed width and offset (static_asserts below) so the
// library and a daemon of another build agree byte for byte; the header's
// version says which layouts are in use. A request whose magic, version,
// type or length is wrong gets an error reply, never a crash.
#ifndef ROCEMU_VERBS_WIRE_WIRE_PROTOCOL_H_
#define ROCEMU_VERBS_WIRE_WIRE_PROTOCOL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rocemu::verbs::wire {

inline constexpr uint32_t kMagic = 0x52434d55;  // "RCMU"
// 2: device name in Hello, SRQs, process-memory MRs, GID/P_Key queries,
// async events. 3: rereg_mr, doorbells, receive-queue retirement.
inline constexpr uint16_t kVersion = 4;
// Largest datagram either side sends or accepts.
inline constexpr size_t kMaxMessage = 512;
// Reply types are the request type with this bit set.
inline constexpr uint16_t kReplyFlag = 0x8000;
// Capability bits exchanged in Hello.
inline constexpr uint64_t kCapShmBuffers = 1u << 0;  // MRs over memfd
inline constexpr uint64_t kCapCompChannel = 1u << 1;
inline constexpr uint64_t kCapProcessMemory = 1u << 2;  // MRs without an fd
inline constexpr uint64_t kCapSrq = 1u << 3;
inline constexpr uint64_t kCapAsyncEvents = 1u << 4;

enum class MsgType : uint16_t {
  kInvalid = 0,
  kHello = 1,
  kQueryDevice = 2,
  kQueryPort = 3,
  kAllocPd = 4,
  kDeallocPd = 5,
  kRegMr = 6,
  kDeregMr = 7,
  kCreateCq = 8,
  kDestroyCq = 9,
  kCreateQp = 10,
  kModifyQp = 11,
  kQueryQp = 12,
  kDestroyQp = 13,
  kCreateAh = 14,
  kDestroyAh = 15,
  kQueryGid = 16,
  kQueryPkey = 17,
  kCreateSrq = 18,
  kModifySrq = 19,
  kQuerySrq = 20,
  kDestroySrq = 21,
  kOpenAsync = 22,
  kReregMr = 23,
  kOpenDoorbells = 24,
  kAllocMw = 25,
  kDeallocMw = 26,
  kResizeCq = 27,
  // The Communication Manager (librdmacm, verbs/rdmacm/).
  kCmOpen = 28,
  kCmListen = 29,
  kCmConnect = 30,
  kCmAccept = 31,
  kCmReject = 32,
  kCmEstablish = 33,
  kCmDisconnect = 34,
  kCmDestroy = 35,
  kCmInitQpAttr = 36,
  kCmSidrQuery = 37,
  kCmSidrReply = 38,
  kCmResolve = 39,
  // ibv_attach_mcast / ibv_detach_mcast (librdmacm's joins use them too).
  kAttachMcast = 40,
  kDetachMcast = 41,
  // rdma_cm's own transitions of an id's QP in one round trip.
  kCmModifyQp = 42,
  // The valid entries of the GID table from an index on, a batch at a time.
  kQueryGidTable = 43,
  // XRC (annex A14): domains, XRC SRQs, TGT QPs made or opened by number.
  kOpenXrcd = 44,
  kCloseXrcd = 45,
  kCreateXrcSrq = 46,
  kXrcTgtQp = 47,
  // ibv_create_flow / ibv_destroy_flow (raw packet QPs).
  kCreateFlow = 48,
  kDestroyFlow = 49,
  // ibv_create_qp_ex with rx_hash_conf: the QP's indirection table of WQs.
  kSetRss = 50,
  // Tag matching: create_srq_ex with IBV_SRQT_TM, ibv_post_srq_ops.
  kCreateTmSrq = 51,
  kPostSrqOps = 52,
};
inline constexpr uint16_t kMaxMsgType = 52;
const char* MsgTypeName(MsgType t);

struct MsgHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t type;    // MsgType, | kReplyFlag on replies
  uint32_t length;  // whole message, header included
  uint32_t seq;     // chosen by the client, echoed in the reply
};
static_assert(sizeof(MsgHeader) == 16);

// Follows the header of every reply. `error` is 0 or a positive errno
// value (as ibverbs calls return them); the message says why.
struct ReplyStatus {
  int32_t error;
  uint32_t reserved;
  char message[120];  // NUL-terminated
};
static_assert(sizeof(ReplyStatus) == 128);

// --- request and reply bodies -------------------------------------------

struct HelloReq {
  uint16_t min_version;
  uint16_t max_version;
  uint32_t reserved;
  uint64_t capabilities;
  char client_name[32];
};
struct HelloResp {
  uint16_t version;
  uint16_t reserved;
  uint32_t client_id;
  uint64_t capabilities;
  uint32_t pid;  // the peer credentials the daemon recorded
  uint32_t uid;
  uint32_t gid;
  uint32_t sq_slot_size;
  uint32_t rq_slot_size;
  uint32_t cqe_slot_size;
  char device_name[40];  // NUL-terminated
};

struct Empty {};

// ibv_device_attr's fields that mean something on RoCE.
struct QueryDeviceResp {
  char fw_ver[64];  // NUL-terminated
  uint64_t node_guid;
  uint64_t sys_image_guid;
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id;
  uint32_t vendor_part_id;
  uint32_t hw_ver;
  uint32_t max_qp;
  uint32_t max_qp_wr;
  uint32_t device_cap_flags;
  uint32_t max_sge;
  uint32_t max_sge_rd;
  uint32_t max_cq;
  uint32_t max_cqe;
  uint32_t max_mr;
  uint32_t max_pd;
  uint32_t max_qp_rd_atom;
  uint32_t max_res_rd_atom;
  uint32_t max_qp_init_rd_atom;
  uint32_t atomic_cap;
  uint32_t max_ah;
  uint32_t max_srq;
  uint32_t max_srq_wr;
  uint32_t max_srq_sge;
  uint32_t max_inline_data;
  uint32_t max_msg_sz;
  uint16_t max_pkeys;
  uint8_t local_ca_ack_delay;
  uint8_t phys_port_cnt;
  uint32_t max_mw;
  uint32_t max_mcast_grp;
  uint32_t max_mcast_qp_attach;
  uint32_t max_total_mcast_qp_attach;
  uint32_t reserved;
};

struct QueryPortReq {
  uint8_t port_num;
  uint8_t reserved[7];
};
struct QueryPortResp {
  uint8_t gid[16];  // GID index 0
  uint8_t mac[6];
  uint8_t active_mtu;  // IBV_MTU_* code
  uint8_t state;       // IBV_PORT_* value
  uint8_t max_mtu;
  uint8_t link_layer;  // IBV_LINK_LAYER_ETHERNET
  uint8_t active_width;
  uint8_t active_speed;
  uint8_t phys_state;
  uint8_t max_vl_num;
  uint16_t pkey_tbl_len;
  int32_t gid_tbl_len;
  uint32_t port_cap_flags;
  uint32_t max_msg_sz;
  uint32_t bad_pkey_cntr;
  uint32_t qkey_viol_cntr;
};

// query_gid and query_pkey.
struct TableQueryReq {
  uint8_t port_num;
  uint8_t reserved[3];
  uint32_t index;
};
struct QueryGidResp {
  uint8_t gid[16];  // all zero for an empty entry, as ibv_query_gid
};
// Valid (non-zero) GIDs from `index` on, at most kGidBatch of them: what
// rdma_cm and ibv_query_gid_table read at start-up took one round trip per
// entry of a 512-entry table of which a port fills a handful.
inline constexpr uint32_t kGidBatch = 16;
struct QueryGidTableResp {
  uint32_t count;       // entries filled
  uint32_t next_index;  // where to go on; the table's length when done
  struct Entry {
    uint32_t index;
    uint8_t gid[16];
  } entries[kGidBatch];
};
static_assert(sizeof(QueryGidTableResp) <= 400);
struct QueryPkeyResp {
  uint16_t pkey;  // host order
  uint16_t reserved[3];
};

struct HandleReq {  // dealloc_pd, dereg_mr, destroy_cq, destroy_qp, ...
  uint32_t handle;
  uint32_t reserved;
};
struct McastReq {  // attach_mcast, detach_mcast
  uint32_t qpn;
  uint16_t lid;  // ignored on RoCE, as by ConnectX and rxe
  uint16_t reserved;
  uint8_t gid[16];
};
// ibv_create_flow, its specs already folded by the library into the
// RNIC's match key (nic/flow_table.h: value and mask over flow_key's
// layout, the layers the frame must have). Reply: HandleResp.
struct CreateFlowReq {
  uint32_t qpn;
  uint8_t type;  // ibv_flow_attr_type
  uint8_t layers;
  uint16_t priority;
  uint8_t value[64];
  uint8_t mask[64];
};
// The RSS of a raw packet QP (nic/rss.h): its WQs (receive-only raw QPs
// of the same client) and hash. Reply: none.
struct SetRssReq {
  uint32_t qpn;
  uint32_t log_table_size;  // wqs[0, 1 << log_table_size)
  uint64_t fields;          // IBV_RX_HASH_* bits
  uint8_t key_len;
  uint8_t reserved[7];
  uint8_t key[40];
  uint32_t wqs[64];
};
struct AllocMwReq {  // reply: HandleResp with the window's R_Key
  uint32_t pd;
  uint32_t type;  // IBV_MW_TYPE_1 or _2
};
struct HandleResp {  // alloc_pd, create_ah, alloc_mw
  uint32_t handle;
  uint32_t reserved;
};

// With an fd (a sealed memfd from rocemu_alloc_buf): [offset, offset +
// length) of it is the region, seen by the application at iova. Without
// one: [iova, iova + length) of the client process's own address space
// (malloc'd, stack, file-backed), which the RNIC reaches with
// process_vm_readv/writev; offset must be 0.
struct RegMrReq {
  uint32_t pd;
  uint32_t access;  // IBV_ACCESS_* bits, and kRegMrDeviceMemory
  uint64_t iova;
  uint64_t length;
  uint64_t offset;
};
// In RegMrReq::access (no IBV_ACCESS_* bit): the region is device memory
// (ibv_reg_dm_mr over a library buffer), which pins no host page and so
// does not count against RLIMIT_MEMLOCK.
inline constexpr uint32_t kRegMrDeviceMemory = 1u << 31;
// ibv_rereg_mr with IBV_REREG_MR_CHANGE_PD and/or _CHANGE_ACCESS (a new
// translation is a new registration, made by the library): the key stays.
struct ReregMrReq {
  uint32_t key;
  uint32_t flags;  // IBV_REREG_MR_CHANGE_PD = 2, _CHANGE_ACCESS = 4
  uint32_t pd;
  uint32_t access;
};

struct RegMrResp {
  uint32_t lkey;
  uint32_t rkey;
};

inline constexpr uint32_t kCreateCqWithChannel = 1u << 0;  // eventfd attached
// Completions carry CqeSlot::timestamp (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP).
inline constexpr uint32_t kCreateCqWithTimestamps = 1u << 1;
struct CreateCqReq {
  uint32_t cqe;
  uint32_t flags;
};
struct ResizeCqReq {  // reply: CreateCqResp + the new ring's fd
  uint32_t cq;
  uint32_t cqe;
};
struct CreateCqResp {  // + the CQ ring's fd
  uint32_t cq;
  uint32_t cqe;  // actual size
};

struct WireQpCap {
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
};

inline constexpr uint16_t kCreateQpWithSrq = 1u << 0;
// Then to INIT as rdma_create_qp takes an RC, UC or XRC INI QP there:
// P_Key index 0, port 1, no remote access. rdma_cm's two requests in one.
inline constexpr uint16_t kCreateQpToInit = 1u << 1;
struct CreateQpReq {
  uint32_t pd;
  uint8_t qp_type;  // IBV_QPT_RC = 2, IBV_QPT_UC = 3, IBV_QPT_UD = 4
  uint8_t sq_sig_all;
  uint16_t flags;  // kCreateQp*
  uint32_t send_cq;
  uint32_t recv_cq;
  WireQpCap cap;
  uint32_t srq;  // with kCreateQpWithSrq: receives come from this SRQ
};
struct CreateQpResp {  // + the SQ and RQ rings' fds
  uint32_t qpn;
  WireQpCap cap;
};

struct WireAhAttr {
  uint8_t dgid[16];
  uint8_t dmac[6];
  uint8_t sgid_index;
  uint8_t traffic_class;
  uint32_t flow_label;
  uint8_t hop_limit;
  uint8_t sl;
  uint8_t port_num;
  uint8_t reserved;
};

struct WireQpAttr {
  uint8_t qp_state;  // IBV_QPS_* values
  uint8_t cur_qp_state;
  uint8_t path_mtu;
  uint8_t en_sqd_async_notify;
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  uint32_t qp_access_flags;
  WireQpCap cap;
  WireAhAttr ah_attr;
  uint16_t pkey_index;
  uint8_t sq_draining;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
  uint8_t reserved[2];
};

struct ModifyQpReq {
  uint32_t qpn;
  uint32_t attr_mask;  // IBV_QP_* bits
  WireQpAttr attr;
};
struct QueryQpResp {
  WireQpAttr attr;
};

struct CreateAhReq {
  uint32_t pd;
  uint32_t reserved;
  WireAhAttr attr;
};

struct WireSrqAttr {
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
};
// open_xrcd: with the file's fd (SCM_RIGHTS), the domain of that file
// (the daemon keys it by the file's st_dev and st_ino: holding the fd is
// what shows the client may open it), made with O_CREAT, refused with
// O_EXCL when it exists; without an fd, a domain of this client alone.
// Reply: HandleResp. close_xrcd: HandleReq.
struct OpenXrcdReq {
  uint32_t oflags;  // O_CREAT, O_EXCL
  uint32_t reserved;
};
// create_srq_ex with IBV_SRQT_XRC. Reply: the SRQ ring's fd.
struct CreateXrcSrqReq {
  uint32_t pd;
  uint32_t xrcd;
  uint32_t cq;
  uint32_t reserved;
  WireSrqAttr attr;
};
struct CreateXrcSrqResp {
  uint32_t srq;
  uint32_t srqn;  // ibv_get_srq_num: what the XRCETH names
  WireSrqAttr attr;
};
// create_qp of IBV_QPT_XRC_RECV (qpn 0), or ibv_open_qp of the TGT QP
// `qpn` of the domain. The TGT QP has no queues: no ring comes back.
struct XrcTgtQpReq {
  uint32_t xrcd;
  uint32_t qpn;
};
struct XrcTgtQpResp {
  uint32_t qpn;
  uint32_t reserved;
};
struct CreateSrqReq {
  uint32_t pd;
  WireSrqAttr attr;
};
// create_srq_ex with IBV_SRQT_TM: completions to `cq`, a matching list of
// max_num_tags. Reply: CreateSrqResp and the SRQ ring's fd.
struct CreateTmSrqReq {
  uint32_t pd;
  uint32_t cq;
  uint32_t max_num_tags;
  uint32_t max_ops;
  WireSrqAttr attr;
};
// ibv_post_srq_ops, one operation (ibv_ops_wr; one SGE at most, as
// tm_caps.max_sge). Reply: HandleResp (ADD: the buffer's handle).
struct PostSrqOpsReq {
  uint64_t wr_id;
  uint32_t srq;
  uint8_t opcode;  // IBV_WR_TAG_ADD, _DEL, _SYNC
  uint8_t num_sge;
  uint16_t reserved;
  uint32_t flags;  // IBV_OPS_SIGNALED, IBV_OPS_TM_SYNC
  uint32_t unexpected_cnt;
  uint32_t handle;
  uint32_t reserved1;
  uint64_t recv_wr_id;
  uint64_t tag;
  uint64_t mask;
  uint64_t addr;  // the SGE (num_sge 1)
  uint32_t length;
  uint32_t lkey;
};
struct CreateSrqResp {  // + the SRQ ring's fd
  uint32_t srq;
  WireSrqAttr attr;  // actual sizes
};
struct ModifySrqReq {
  uint32_t srq;
  uint32_t attr_mask;  // IBV_SRQ_MAX_WR = 1, IBV_SRQ_LIMIT = 2
  WireSrqAttr attr;
};
struct QuerySrqResp {
  WireSrqAttr attr;
};

// open_async: the client's eventfd goes with the request; the reply brings
// the ring of AsyncEventSlot (ring_slots.h) the daemon writes events into.
struct OpenAsyncResp {
  uint32_t capacity;
  uint32_t reserved;
};

// open_doorbells (verbs/wire/doorbell.h): the reply brings the client's
// doorbell ring (the client produces DoorbellSlots), the daemon's WakePage (to
// map read-only) and the client's own wake eventfd.
struct OpenDoorbellsResp {
  uint32_t capacity;
  uint32_t reserved;
};

// --- the Communication Manager -------------------------------------------
// cm_open: the client's eventfd goes with the request (the event channel's
// fd); the reply brings the ring of CmEventSlot (ring_slots.h).
struct CmOpenResp {
  uint32_t capacity;
  uint32_t reserved;
};
// The rdma_cm IP header of a REQ / SIDR_REQ (protocol/cm_ip.h).
struct WireCmIp {
  uint8_t present;
  uint8_t ip_version;  // 4 or 6
  uint16_t src_port;
  uint32_t reserved;
  uint8_t src_addr[16];  // GID form (::ffff:a.b.c.d for IPv4)
  uint8_t dst_addr[16];
};
// The path of a connection as the client resolved it; a zero dmac is
// resolved by the daemon (EAGAIN while its neighbour is unknown).
struct WireCmPath {
  uint8_t dgid[16];
  uint8_t dmac[6];
  uint8_t sgid_index;
  uint8_t traffic_class;
  uint16_t pkey;
  uint8_t mtu;  // IBV_MTU_*
  uint8_t hop_limit;
  uint32_t flow_label;
};
struct CmListenReq {
  uint64_t service_id;
  uint8_t bound_gid[16];
  uint8_t bound;    // 0: any of our addresses
  uint8_t qp_type;  // IBV_QPT_* of the listening id; 0: any transport
  uint8_t reserved[6];
};
struct CmIdResp {
  uint32_t id;
  uint32_t reserved;
};
struct CmIdReq {
  uint32_t id;
  // cm_disconnect: the id's QP (0: none), moved to ERR first, as
  // rdma_disconnect does before its DREQ (one round trip for both).
  uint32_t qpn;
};
struct CmConnectReq {
  uint64_t service_id;
  uint32_t qpn;
  uint8_t qp_type;  // IBV_QPT_RC, IBV_QPT_UC or IBV_QPT_XRC_SEND
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t retry_count;
  uint8_t rnr_retry_count;
  uint8_t flow_control;
  uint8_t srq;
  uint8_t private_data_len;
  uint32_t starting_psn;  // the QP's receive PSN
  WireCmPath path;
  WireCmIp ip;
  uint8_t private_data[92];
  uint8_t reserved[4];
};
struct CmAcceptReq {
  uint32_t id;
  uint32_t qpn;
  uint8_t responder_resources;
  uint8_t initiator_depth;
  uint8_t rnr_retry_count;
  uint8_t flow_control;
  uint8_t srq;
  uint8_t private_data_len;
  uint8_t flags;  // kCmAcceptToRts
  uint8_t reserved;
  uint8_t private_data[196];
};
// Before the REP, the QP to RTS as cm_modify_qp would take it (qp_state
// RTS, this accept's responder_resources and initiator_depth, no TOS or
// timeout of the program's): rdma_accept's two requests in one.
inline constexpr uint8_t kCmAcceptToRts = 1u << 0;
struct CmRejectReq {
  uint32_t id;
  uint16_t reason;
  uint8_t private_data_len;
  uint8_t reserved;
  uint8_t private_data[148];
};
struct CmInitQpAttrReq {
  uint32_t id;
  uint8_t qp_state;  // IBV_QPS_INIT, _RTR or _RTS
  uint8_t reserved[3];
};
struct CmInitQpAttrResp {
  uint32_t attr_mask;  // IBV_QP_* bits
  uint32_t reserved;
  WireQpAttr attr;
};
// rdma_cm moves an id's QP itself (librdmacm's ucma_modify_qp_rtr/_rts:
// after the REP on the active side, at rdma_accept on the passive side).
// The daemon computes each step's attributes as kCmInitQpAttr answers them,
// applies the caller's overrides and modifies the QP: INIT again (the CM's
// partition, port and rights), RTR, then RTS if asked. One round trip
// instead of an attribute query and a modify per step; a step the QP has
// already reached is skipped, so a call retried after EAGAIN (address
// still resolving) goes on where it stopped.
struct CmModifyQpReq {
  uint32_t id;
  uint32_t qpn;
  uint8_t qp_state;             // IBV_QPS_RTR or IBV_QPS_RTS: the last step
  uint8_t responder_resources;  // 0xff (RDMA_MAX_RESP_RES): the CM's
  uint8_t initiator_depth;      // 0xff (RDMA_MAX_INIT_DEPTH): the CM's
  uint8_t flags;                // kCmModify*
  uint8_t tos;                  // rdma_set_option's TOS
  uint8_t timeout;              // rdma_set_option's ACK timeout
  uint8_t reserved[6];
};
inline constexpr uint8_t kCmModifyTos = 1u << 0;
inline constexpr uint8_t kCmModifyTimeout = 1u << 1;
// Once in RTS, the RTU too (cm_establish): the active side's last step.
inline constexpr uint8_t kCmModifyEstablish = 1u << 2;

struct CmSidrQueryReq {
  uint64_t service_id;
  WireCmPath path;
  WireCmIp ip;
  uint8_t private_data_len;
  uint8_t reserved[7];
  uint8_t private_data[216];
};
struct CmSidrReplyReq {
  uint32_t id;
  uint32_t qpn;
  uint32_t qkey;
  uint8_t status;
  uint8_t private_data_len;
  uint8_t reserved[2];
  uint8_t private_data[136];
};
// cm_resolve: the MAC of `dgid`'s next hop (rdma_resolve_addr); EAGAIN
// while the daemon's neighbour resolution runs.
struct CmResolveReq {
  uint8_t dgid[16];
};
struct CmResolveResp {
  uint8_t dmac[6];
  uint8_t hop_limit;
  uint8_t reserved;
};

static_assert(sizeof(WireCmIp) == 40);
static_assert(sizeof(WireCmPath) == 32);
static_assert(sizeof(CmConnectReq) == 192);
static_assert(sizeof(CmAcceptReq) == 212);
static_assert(sizeof(CmSidrQueryReq) == 304);
static_assert(sizeof(CmInitQpAttrResp) == 96);

static_assert(sizeof(QueryDeviceResp) == 208);
static_assert(sizeof(McastReq) == 24);
static_assert(sizeof(CreateFlowReq) == 136);
static_assert(sizeof(SetRssReq) == 320);
static_assert(sizeof(QueryPortResp) == 52);
static_assert(sizeof(TableQueryReq) == 8);
static_assert(sizeof(CreateSrqReq) == 16);
static_assert(sizeof(ModifySrqReq) == 20);
static_assert(sizeof(HelloReq) == 48);
static_assert(sizeof(HelloResp) == 80);
static_assert(sizeof(RegMrReq) == 32);
static_assert(sizeof(ReregMrReq) == 16);
static_assert(sizeof(CreateQpReq) == 40);
static_assert(sizeof(WireAhAttr) == 32);
static_assert(sizeof(WireQpAttr) == 88);
static_assert(sizeof(ModifyQpReq) == 96);
static_assert(sizeof(CreateAhReq) == 40);

// What travels with each message type: body sizes and how many fds.
struct MsgLayout {
  uint32_t request_body;
  uint32_t reply_body;
  uint8_t request_fds_min;
  uint8_t request_fds_max;
  uint8_t reply_fds;
};
// The layout of a valid type (kMaxMsgType >= t > 0).
MsgLayout LayoutOf(MsgType t);

// --- encoding and decoding ----------------------------------------------

// Writes header + body into `out`; returns the message length (0 when
// `out` is too small).
size_t EncodeRequest(MsgType type, uint32_t seq, const void* body,
                     size_t body_len, std::span<uint8_t> out);
template <typename Body>
size_t EncodeRequest(MsgType type, uint32_t seq, const Body& body,
                     std::span<uint8_t> out) {
  static_assert(std::is_trivially_copyable_v<Body>);
  return EncodeRequest(type, seq, &body,
                       std::is_empty_v<Body> ? 0 : sizeof(Body), out);
}
// A reply: header + ReplyStatus + body (body omitted when error != 0).
size_t EncodeReply(uint16_t type, uint32_t seq, int error, const char* message,
                   const void* body, size_t body_len, std::span<uint8_t> out);

struct DecodedRequest {
  MsgType type = MsgType::kInvalid;
  uint32_t seq = 0;
  std::span<const uint8_t> body;
};
// Checks magic, version, type and exact length. On failure the status
// says why and *seq / *type are what could be read (for the error reply).
absl::StatusOr<DecodedRequest> DecodeRequest(std::span<const uint8_t> msg,
                                             uint32_t* seq, uint16_t* type);

struct DecodedReply {
  int error = 0;
  const char* message = "";
  std::span<const uint8_t> body;  // empty on error
};
// Checks that `msg` answers `type`/`seq` with the expected body size.
absl::StatusOr<DecodedReply> DecodeReply(std::span<const uint8_t> msg,
                                         MsgType type, uint32_t seq);

// Copies a body out of a decoded message whose length was checked.
template <typename Body>
Body BodyAs(std::span<const uint8_t> body) {
  static_assert(std::is_trivially_copyable_v<Body>);
  Body b{};
  std::memcpy(&b, body.data(), std::min(body.size(), sizeof(Body)));
  return b;
}

}  // namespace rocemu::verbs::wire

#endif  // ROCEMU_VERBS_WIRE_WIRE_PROTOCOL_H_
