/* The rocemu verbs library: the ibverbs object model over the rocemu
 * daemon. Control calls (open, PD, MR, CQ, QP create/modify/destroy) are
 * requests on the daemon's Unix socket; rocemu_post_send, rocemu_post_recv
 * and rocemu_poll_cq only touch shared-memory rings (no syscall);
 * completion channels are eventfds the daemon writes when a CQ is armed.
 *
 * Names, enum values and calling conventions follow <infiniband/verbs.h>
 * (functions returning int return 0 or an errno value; those returning a
 * pointer return NULL and set errno) so that a libibverbs provider can map
 * ibv_* calls one to one onto these.
 *
 * Memory: rocemu_reg_mr takes any memory of the process. A region inside
 * a buffer from rocemu_alloc_buf is shared with the daemon (memfd); any
 * other range (malloc'd, stack, mmap'd) is reached by the daemon with
 * process_vm_readv/writev. See docs/verbs.md.
 *
 * Threads: control calls may come from any thread. Posting to one QP and
 * polling one CQ must each be done by one thread at a time (the rings are
 * single-producer, single-consumer).
 */
#ifndef ROCEMU_VERBS_ROCEMU_VERBS_H_
#define ROCEMU_VERBS_ROCEMU_VERBS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct rocemu_device;
struct rocemu_context;
struct rocemu_pd;
struct rocemu_srq;
struct rocemu_xrcd;
struct rocemu_cq;
struct rocemu_qp;
struct rocemu_ah;
struct rocemu_comp_channel;

/* A daemon-shared buffer (memfd) that regions can be registered in. */
struct rocemu_buf {
  void* addr;
  size_t length;
};

struct rocemu_mr {
  struct rocemu_pd* pd;
  void* addr;
  size_t length;
  uint32_t lkey;
  uint32_t rkey;
  int access; /* as registered */
};

enum rocemu_access_flags {
  ROCEMU_ACCESS_LOCAL_WRITE = 1,
  ROCEMU_ACCESS_REMOTE_WRITE = 1 << 1,
  ROCEMU_ACCESS_REMOTE_READ = 1 << 2,
  ROCEMU_ACCESS_REMOTE_ATOMIC = 1 << 3,
  ROCEMU_ACCESS_MW_BIND = 1 << 4, /* memory windows may be bound into it */
  /* On-demand paging: nothing is pinned, remapped or required to be mapped
   * at registration; every access reaches the process's pages as they are
   * then (process_vm_readv/writev, one call per access), and a page
   * mapped nowhere fails that access. addr NULL with length SIZE_MAX
   * registers the whole address space (implicit ODP). */
  ROCEMU_ACCESS_ON_DEMAND = 1 << 6,
  /* RDMA FLUSH of global visibility may target it (IBV_ACCESS_FLUSH_GLOBAL
   * of rdma-core 45). No region is persistent memory: FLUSH_PERSISTENT
   * (1 << 9) is refused. */
  ROCEMU_ACCESS_FLUSH_GLOBAL = 1 << 8,
};

enum rocemu_qp_type {
  ROCEMU_QPT_RC = 2,
  ROCEMU_QPT_UC = 3,
  ROCEMU_QPT_UD = 4,
  /* Whole Ethernet frames: sends leave as built, receives come through
   * flow rules (rocemu_create_flow). */
  ROCEMU_QPT_RAW_PACKET = 8,
  ROCEMU_QPT_XRC_SEND = 9,  /* XRC INI: sends only, to a remote XRC SRQ */
  ROCEMU_QPT_XRC_RECV = 10, /* XRC TGT: rocemu_open_xrc_tgt_qp */
};

enum rocemu_qp_state {
  ROCEMU_QPS_RESET,
  ROCEMU_QPS_INIT,
  ROCEMU_QPS_RTR,
  ROCEMU_QPS_RTS,
  ROCEMU_QPS_SQD,
  ROCEMU_QPS_SQE,
  ROCEMU_QPS_ERR,
};

enum rocemu_mtu {
  ROCEMU_MTU_256 = 1,
  ROCEMU_MTU_512 = 2,
  ROCEMU_MTU_1024 = 3,
  ROCEMU_MTU_2048 = 4,
  ROCEMU_MTU_4096 = 5,
};

enum rocemu_qp_attr_mask {
  ROCEMU_QP_STATE = 1 << 0,
  ROCEMU_QP_CUR_STATE = 1 << 1,
  ROCEMU_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
  ROCEMU_QP_ACCESS_FLAGS = 1 << 3,
  ROCEMU_QP_PKEY_INDEX = 1 << 4,
  ROCEMU_QP_PORT = 1 << 5,
  ROCEMU_QP_QKEY = 1 << 6,
  ROCEMU_QP_AV = 1 << 7,
  ROCEMU_QP_PATH_MTU = 1 << 8,
  ROCEMU_QP_TIMEOUT = 1 << 9,
  ROCEMU_QP_RETRY_CNT = 1 << 10,
  ROCEMU_QP_RNR_RETRY = 1 << 11,
  ROCEMU_QP_RQ_PSN = 1 << 12,
  ROCEMU_QP_MAX_QP_RD_ATOMIC = 1 << 13,
  ROCEMU_QP_MIN_RNR_TIMER = 1 << 15,
  ROCEMU_QP_SQ_PSN = 1 << 16,
  ROCEMU_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
  ROCEMU_QP_CAP = 1 << 19,
  ROCEMU_QP_DEST_QPN = 1 << 20,
};

enum rocemu_wr_opcode {
  ROCEMU_WR_RDMA_WRITE = 0,
  ROCEMU_WR_RDMA_WRITE_WITH_IMM = 1,
  ROCEMU_WR_SEND = 2,
  ROCEMU_WR_SEND_WITH_IMM = 3,
  ROCEMU_WR_RDMA_READ = 4,
  ROCEMU_WR_ATOMIC_CMP_AND_SWP = 5,
  ROCEMU_WR_ATOMIC_FETCH_AND_ADD = 6,
  ROCEMU_WR_LOCAL_INV = 7, /* invalidate_rkey: a type 2 window of this QP */
  ROCEMU_WR_BIND_MW = 8,   /* through the drop-in libibverbs only */
  ROCEMU_WR_SEND_WITH_INV = 9,
  ROCEMU_WR_FLUSH = 14, /* through the drop-in's ibv_wr_flush only */
  /* wr.rdma names the target; the 8 bytes to store are read at post time
   * from sg_list[0] (one entry of length 8) */
  ROCEMU_WR_ATOMIC_WRITE = 15,
};

enum rocemu_send_flags {
  ROCEMU_SEND_FENCE = 1 << 0,
  ROCEMU_SEND_SIGNALED = 1 << 1,
  ROCEMU_SEND_SOLICITED = 1 << 2,
  ROCEMU_SEND_INLINE = 1 << 3,
};

enum rocemu_wc_status {
  ROCEMU_WC_SUCCESS = 0,
  ROCEMU_WC_LOC_LEN_ERR = 1,
  ROCEMU_WC_LOC_QP_OP_ERR = 2,
  ROCEMU_WC_LOC_PROT_ERR = 4,
  ROCEMU_WC_WR_FLUSH_ERR = 5,
  ROCEMU_WC_REM_ACCESS_ERR = 10,
  ROCEMU_WC_RETRY_EXC_ERR = 12,
  ROCEMU_WC_RNR_RETRY_EXC_ERR = 13,
};

enum rocemu_wc_opcode {
  ROCEMU_WC_SEND = 0,
  ROCEMU_WC_RDMA_WRITE = 1,
  ROCEMU_WC_RDMA_READ = 2,
  ROCEMU_WC_COMP_SWAP = 3,
  ROCEMU_WC_FETCH_ADD = 4,
  ROCEMU_WC_FLUSH = 8,
  ROCEMU_WC_ATOMIC_WRITE = 9,
  ROCEMU_WC_RECV = 128,
  ROCEMU_WC_RECV_RDMA_WITH_IMM = 129,
};

enum rocemu_wc_flags {
  ROCEMU_WC_GRH = 1 << 0,
  ROCEMU_WC_WITH_IMM = 1 << 1,
  ROCEMU_WC_WITH_INV = 1 << 3,
};

struct rocemu_sge {
  uint64_t addr;
  uint32_t length;
  uint32_t lkey;
};

struct rocemu_send_wr {
  uint64_t wr_id;
  struct rocemu_send_wr* next;
  struct rocemu_sge* sg_list;
  int num_sge;
  int opcode; /* enum rocemu_wr_opcode */
  unsigned int send_flags;
  uint32_t imm_data; /* network byte order, as ibv_send_wr */
  union {
    struct {
      uint64_t remote_addr;
      uint32_t rkey;
    } rdma;
    struct {
      uint64_t remote_addr;
      uint64_t compare_add;
      uint64_t swap;
      uint32_t rkey;
    } atomic;
    struct {
      struct rocemu_ah* ah;
      uint32_t remote_qpn;
      uint32_t remote_qkey;
    } ud;
  } wr;
  uint32_t invalidate_rkey;
  uint32_t remote_srqn; /* XRC INI QP: the target's XRC SRQ number */
};

struct rocemu_recv_wr {
  uint64_t wr_id;
  struct rocemu_recv_wr* next;
  struct rocemu_sge* sg_list;
  int num_sge;
};

struct rocemu_wc {
  uint64_t wr_id;
  int status; /* enum rocemu_wc_status */
  int opcode; /* enum rocemu_wc_opcode */
  uint32_t vendor_err;
  uint32_t byte_len;
  uint32_t imm_data; /* network byte order; or the invalidated R_Key */
  uint32_t qp_num;
  uint32_t src_qp;
  unsigned int wc_flags;
  uint16_t pkey_index;
  uint16_t slid;
  uint8_t sl;
  uint8_t dlid_path_bits;
};

struct rocemu_qp_cap {
  uint32_t max_send_wr;
  uint32_t max_recv_wr;
  uint32_t max_send_sge;
  uint32_t max_recv_sge;
  uint32_t max_inline_data;
};

struct rocemu_qp_init_attr {
  void* qp_context;
  struct rocemu_cq* send_cq;
  struct rocemu_cq* recv_cq;
  struct rocemu_srq* srq; /* NULL: the QP has its own receive queue */
  struct rocemu_qp_cap cap;
  int qp_type; /* enum rocemu_qp_type */
  int sq_sig_all;
};

/* RoCE v2: the GID is the peer's IP address (IPv4-mapped for IPv4). An
 * all-zero dmac is resolved by the daemon (its neighbour cache): modify_qp
 * and create_ah wait for it, up to 3 s, then fail with EHOSTUNREACH. */
struct rocemu_ah_attr {
  uint8_t dgid[16];
  uint8_t dmac[6];
  uint8_t sgid_index;
  uint8_t traffic_class;
  uint32_t flow_label;
  uint8_t hop_limit;
  uint8_t sl;
  uint8_t port_num;
};

struct rocemu_qp_attr {
  int qp_state; /* enum rocemu_qp_state */
  int cur_qp_state;
  int path_mtu; /* enum rocemu_mtu */
  uint32_t qkey;
  uint32_t rq_psn;
  uint32_t sq_psn;
  uint32_t dest_qp_num;
  unsigned int qp_access_flags;
  struct rocemu_qp_cap cap;
  struct rocemu_ah_attr ah_attr;
  uint16_t pkey_index;
  uint8_t max_rd_atomic;
  uint8_t max_dest_rd_atomic;
  uint8_t min_rnr_timer;
  uint8_t port_num;
  uint8_t timeout;
  uint8_t retry_cnt;
  uint8_t rnr_retry;
};

enum rocemu_port_state {
  ROCEMU_PORT_NOP = 0,
  ROCEMU_PORT_DOWN = 1,
  ROCEMU_PORT_INIT = 2,
  ROCEMU_PORT_ARMED = 3,
  ROCEMU_PORT_ACTIVE = 4,
  ROCEMU_PORT_ACTIVE_DEFER = 5,
};

enum { ROCEMU_LINK_LAYER_ETHERNET = 2 };

struct rocemu_port_attr {
  int state;       /* enum rocemu_port_state */
  int active_mtu;  /* enum rocemu_mtu */
  uint8_t gid[16]; /* GID index 0 */
  uint8_t mac[6];
  int max_mtu; /* enum rocemu_mtu */
  int gid_tbl_len;
  uint32_t port_cap_flags;
  uint32_t max_msg_sz;
  uint32_t bad_pkey_cntr;
  uint32_t qkey_viol_cntr;
  uint16_t pkey_tbl_len;
  uint8_t max_vl_num;
  uint8_t active_width;
  uint8_t active_speed;
  uint8_t phys_state;
  uint8_t link_layer; /* ROCEMU_LINK_LAYER_ETHERNET */
};

enum rocemu_atomic_cap {
  ROCEMU_ATOMIC_NONE = 0,
  ROCEMU_ATOMIC_HCA = 1,
  ROCEMU_ATOMIC_GLOB = 2,
};

/* ibv_device_attr's fields that mean something on RoCE. */
struct rocemu_device_attr {
  char fw_ver[64];
  uint64_t node_guid;
  uint64_t sys_image_guid;
  uint64_t max_mr_size;
  uint64_t page_size_cap;
  uint32_t vendor_id;
  uint32_t vendor_part_id;
  uint32_t hw_ver;
  int max_qp;
  int max_qp_wr;
  unsigned int device_cap_flags;
  int max_sge;
  int max_sge_rd;
  int max_cq;
  int max_cqe;
  int max_mr;
  int max_mw;
  int max_pd;
  int max_qp_rd_atom;
  int max_res_rd_atom;
  int max_qp_init_rd_atom;
  int atomic_cap; /* enum rocemu_atomic_cap */
  int max_ah;
  int max_srq;
  int max_srq_wr;
  int max_srq_sge;
  uint16_t max_pkeys;
  uint8_t local_ca_ack_delay;
  uint8_t phys_port_cnt;
  uint32_t max_inline_data; /* not in ibv_device_attr: the QP inline cap */
  uint32_t max_msg_sz;
  int max_mcast_grp;
  int max_mcast_qp_attach;
  int max_total_mcast_qp_attach;
};

struct rocemu_srq_attr {
  uint32_t max_wr;
  uint32_t max_sge;
  uint32_t srq_limit;
};

struct rocemu_srq_init_attr {
  void* srq_context;
  struct rocemu_srq_attr attr;
};

enum rocemu_srq_attr_mask {
  ROCEMU_SRQ_MAX_WR = 1 << 0,
  ROCEMU_SRQ_LIMIT = 1 << 1,
};

/* ibv_event_type, same values. */
enum rocemu_event_type {
  ROCEMU_EVENT_CQ_ERR = 0,
  ROCEMU_EVENT_QP_FATAL = 1,
  ROCEMU_EVENT_QP_REQ_ERR = 2,
  ROCEMU_EVENT_QP_ACCESS_ERR = 3,
  ROCEMU_EVENT_COMM_EST = 4,
  ROCEMU_EVENT_SQ_DRAINED = 5,
  ROCEMU_EVENT_PATH_MIG = 6,
  ROCEMU_EVENT_PATH_MIG_ERR = 7,
  ROCEMU_EVENT_DEVICE_FATAL = 8,
  ROCEMU_EVENT_PORT_ACTIVE = 9,
  ROCEMU_EVENT_PORT_ERR = 10,
  ROCEMU_EVENT_LID_CHANGE = 11,
  ROCEMU_EVENT_PKEY_CHANGE = 12,
  ROCEMU_EVENT_SM_CHANGE = 13,
  ROCEMU_EVENT_SRQ_ERR = 14,
  ROCEMU_EVENT_SRQ_LIMIT_REACHED = 15,
  ROCEMU_EVENT_QP_LAST_WQE_REACHED = 16,
  ROCEMU_EVENT_CLIENT_REREGISTER = 17,
  ROCEMU_EVENT_GID_CHANGE = 18,
};

struct rocemu_async_event {
  union {
    struct rocemu_cq* cq;
    struct rocemu_qp* qp;
    struct rocemu_srq* srq;
    int port_num;
  } element;
  int event_type; /* enum rocemu_event_type */
};

/* --- devices --- */
/* The daemons' sockets: $ROCEMU_VERBS_SOCKET alone when set, else every
 * socket in $ROCEMU_VERBS_DIR (default /run/rocemu/) that a daemon
 * answers on (each is asked its device name). NULL-terminated; NULL and
 * errno on error. */
struct rocemu_device** rocemu_get_device_list(int* num_devices);
void rocemu_free_device_list(struct rocemu_device** list);
const char* rocemu_get_device_name(const struct rocemu_device* device);
const char* rocemu_get_device_path(const struct rocemu_device* device);
/* ibv_open_device. */
struct rocemu_context* rocemu_open_device_from(
    const struct rocemu_device* device);
/* socket_path NULL: $ROCEMU_VERBS_SOCKET, else /run/rocemu/verbs.sock. */
struct rocemu_context* rocemu_open_device(const char* socket_path);
int rocemu_close_device(struct rocemu_context* ctx);
int rocemu_query_device(struct rocemu_context* ctx,
                        struct rocemu_device_attr* attr);
int rocemu_query_port(struct rocemu_context* ctx, uint8_t port_num,
                      struct rocemu_port_attr* attr);
/* An empty GID table entry reads as all zeros; EINVAL beyond the table. */
int rocemu_query_gid(struct rocemu_context* ctx, uint8_t port_num, int index,
                     uint8_t gid[16]);
/* The table's valid (non-zero) entries, in index order, a few per round
 * trip: how many were written, or -errno (-ENOSPC: more than max_entries). */
struct rocemu_gid_entry {
  uint32_t index;
  uint8_t gid[16];
};
int rocemu_query_gid_table(struct rocemu_context* ctx, uint8_t port_num,
                           struct rocemu_gid_entry* entries, int max_entries);
/* *pkey in network byte order, as ibv_query_pkey. */
int rocemu_query_pkey(struct rocemu_context* ctx, uint8_t port_num, int index,
                      uint16_t* pkey);
/* The id the daemon gave this connection (for logs and tools). */
uint32_t rocemu_client_id(const struct rocemu_context* ctx);
/* The daemon's device name (e.g. "rocemu_p0"), as ibv_get_device_name. */
const char* rocemu_device_name(const struct rocemu_context* ctx);

/* --- protection domains and memory --- */
struct rocemu_pd* rocemu_alloc_pd(struct rocemu_context* ctx);
int rocemu_dealloc_pd(struct rocemu_pd* pd);
/* A zeroed buffer shared with the daemon (a sealed memfd). */
struct rocemu_buf* rocemu_alloc_buf(struct rocemu_context* ctx, size_t length);
int rocemu_free_buf(struct rocemu_buf* buf);
/* Any [addr, addr + length) of this process. Inside one rocemu_alloc_buf
 * buffer the daemon maps it; elsewhere the daemon reaches it with
 * process_vm_readv/writev (it needs ptrace permission over this process:
 * same uid and kernel.yama.ptrace_scope <= 1, or CAP_SYS_PTRACE; EACCES
 * otherwise). Pages are not pinned: memory unmapped while registered makes
 * the work requests touching it complete in error (as with ODP). */
struct rocemu_mr* rocemu_reg_mr(struct rocemu_pd* pd, void* addr, size_t length,
                                int access);
/* As rocemu_reg_mr, but work requests and peers address the region as
 * [iova, iova + length) (ibv_reg_mr_iova2; iova 0 is a zero-based region).
 * The daemon must be able to map the memory (a rocemu_alloc_buf buffer, or
 * private memory it moves onto one): EOPNOTSUPP where it would have to
 * reach it with process_vm (on-demand paging, ROCEMU_MR_REMAP=0, file
 * mappings), which addresses memory by the process's own addresses. */
struct rocemu_mr* rocemu_reg_mr_iova(struct rocemu_pd* pd, void* addr,
                                     size_t length, uint64_t iova, int access);
int rocemu_dereg_mr(struct rocemu_mr* mr);
/* ibv_rereg_mr without a new translation: ROCEMU_REREG_PD (2) moves the
 * region to `pd`, ROCEMU_REREG_ACCESS (4) sets `access`; the keys stay. */
enum { ROCEMU_REREG_PD = 2, ROCEMU_REREG_ACCESS = 4 };
int rocemu_rereg_mr(struct rocemu_mr* mr, int flags, struct rocemu_pd* pd,
                    int access);
/* Memory windows (type 1 or 2): returns 0 and the window's R_Key, or an
 * errno. Deallocation names the window by any key it had. */
int rocemu_alloc_mw(struct rocemu_pd* pd, int type, uint32_t* rkey);
int rocemu_dealloc_mw(struct rocemu_pd* pd, uint32_t rkey);

/* --- completion queues and channels --- */
struct rocemu_comp_channel* rocemu_create_comp_channel(
    struct rocemu_context* ctx);
int rocemu_destroy_comp_channel(struct rocemu_comp_channel* channel);
/* The fd to poll/epoll: readable when an armed CQ got a completion. */
int rocemu_comp_channel_fd(const struct rocemu_comp_channel* channel);
struct rocemu_cq* rocemu_create_cq(struct rocemu_context* ctx, int cqe,
                                   void* cq_context,
                                   struct rocemu_comp_channel* channel,
                                   int comp_vector);
/* As rocemu_create_cq; flags ROCEMU_CQ_TIMESTAMPS: every completion's ring
 * entry carries the time the daemon queued it, on rocemu_clock_ns()'s clock
 * (the drop-in's extended CQs read it: ibv_wc_read_completion_ts). */
enum { ROCEMU_CQ_TIMESTAMPS = 1 };
struct rocemu_cq* rocemu_create_cq_ex(struct rocemu_context* ctx, int cqe,
                                      void* cq_context,
                                      struct rocemu_comp_channel* channel,
                                      int comp_vector, int flags);
/* The clock of completion timestamps: CLOCK_MONOTONIC_RAW, nanoseconds. */
uint64_t rocemu_clock_ns(void);
int rocemu_destroy_cq(struct rocemu_cq* cq);
/* ibv_resize_cq: completions not yet polled are kept (EINVAL when more
 * are queued than `cqe`); *actual gets the new size. */
int rocemu_resize_cq(struct rocemu_cq* cq, int cqe, int* actual);
int rocemu_req_notify_cq(struct rocemu_cq* cq, int solicited_only);
/* Blocks until a CQ of the channel fires (timeout_ms < 0: for ever;
 * ETIMEDOUT otherwise). */
int rocemu_get_cq_event(struct rocemu_comp_channel* channel,
                        struct rocemu_cq** cq, void** cq_context,
                        int timeout_ms);
void rocemu_ack_cq_events(struct rocemu_cq* cq, unsigned int nevents);
/* Returns the number of completions written (0..num), or -1 when the CQ
 * ring was corrupted. */
int rocemu_poll_cq(struct rocemu_cq* cq, int num, struct rocemu_wc* wc);
/* With the RNIC embedded in this process ($ROCEMU_EMBEDDED), runs one pass
 * of its loop on the calling thread and returns 1: a program that waits by
 * polling memory (a peer's RDMA WRITE) calls it as rocemu_poll_cq runs it
 * on an empty CQ. Else does nothing and returns 0. */
int rocemu_progress(void);

/* --- queue pairs and address handles --- */
struct rocemu_qp* rocemu_create_qp(struct rocemu_pd* pd,
                                   struct rocemu_qp_init_attr* attr);
int rocemu_modify_qp(struct rocemu_qp* qp, struct rocemu_qp_attr* attr,
                     int attr_mask);
int rocemu_query_qp(struct rocemu_qp* qp, struct rocemu_qp_attr* attr,
                    int attr_mask);
int rocemu_destroy_qp(struct rocemu_qp* qp);
uint32_t rocemu_qp_num(const struct rocemu_qp* qp);
int rocemu_post_send(struct rocemu_qp* qp, struct rocemu_send_wr* wr,
                     struct rocemu_send_wr** bad_wr);
int rocemu_post_recv(struct rocemu_qp* qp, struct rocemu_recv_wr* wr,
                     struct rocemu_recv_wr** bad_wr);
struct rocemu_ah* rocemu_create_ah(struct rocemu_pd* pd,
                                   struct rocemu_ah_attr* attr);
int rocemu_destroy_ah(struct rocemu_ah* ah);
/* A UD QP joins (leaves) the multicast group `gid` (an IPv4-mapped
 * 224.0.0.0/4 or an ff00::/8 GID): UD SENDs to that GID with remote QPN
 * 0xFFFFFF reach it. EINVAL for other QP types, a unicast GID, or leaving a
 * group the QP is not in; ENOMEM past max_mcast_grp /
 * max_mcast_qp_attach. */
int rocemu_attach_mcast(struct rocemu_qp* qp, const uint8_t gid[16]);
int rocemu_detach_mcast(struct rocemu_qp* qp, const uint8_t gid[16]);
/* A flow steering rule of a raw packet QP (ibv_create_flow): frames that
 * are not the RNIC's own and match `value` under `mask` (the match key of
 * nic/flow_table.h, network byte order) and have every `layers` bit
 * (nic/flow_table.h's flow_layer) are placed whole into the QP's receive
 * WQEs. EINVAL for another QP type or a value outside its mask, ENOMEM
 * past the device's rules; *handle names it for rocemu_destroy_flow. */
struct rocemu_flow_rule {
  uint8_t
      type; /* ibv_flow_attr_type: NORMAL, ALL_DEFAULT, MC_DEFAULT, SNIFFER */
  uint8_t layers;
  uint16_t priority; /* lower first */
  uint8_t value[64];
  uint8_t mask[64];
};
int rocemu_create_flow(struct rocemu_qp* qp,
                       const struct rocemu_flow_rule* rule, uint32_t* handle);
int rocemu_destroy_flow(struct rocemu_context* ctx, uint32_t handle);
/* Receive-side scaling of a raw packet QP (ibv_create_qp_ex with
 * rx_hash_conf): frames its flow rules take go to one of `wqs` (receive-
 * only raw packet QPs of the same PD: ibv_create_wq), picked by the
 * Toeplitz hash under `key` of the IBV_RX_HASH_* `fields` (nic/rss.h).
 * 1 << log_table_size WQs, at most 64; a key of 4 to 40 bytes. */
int rocemu_set_rss(struct rocemu_qp* qp, uint64_t fields, const uint8_t* key,
                   uint32_t key_len, struct rocemu_qp* const* wqs,
                   uint32_t log_table_size);

/* --- shared receive queues --- */
struct rocemu_srq* rocemu_create_srq(struct rocemu_pd* pd,
                                     struct rocemu_srq_init_attr* attr);
/* ROCEMU_SRQ_LIMIT arms the limit event (0 disarms); ROCEMU_SRQ_MAX_WR
 * (resize) is not supported: EINVAL. */
int rocemu_modify_srq(struct rocemu_srq* srq, struct rocemu_srq_attr* attr,
                      int attr_mask);
int rocemu_query_srq(struct rocemu_srq* srq, struct rocemu_srq_attr* attr);
/* EBUSY while QPs use it. */
int rocemu_destroy_srq(struct rocemu_srq* srq);
/* Through a shared-memory ring, like rocemu_post_recv: no syscall. */
int rocemu_post_srq_recv(struct rocemu_srq* srq, struct rocemu_recv_wr* wr,
                         struct rocemu_recv_wr** bad_wr);

/* --- XRC (IBTA annex A14) --- */
/* ibv_open_xrcd: the domain of the file `fd` is open on (shared by every
 * process that opens the same file), made with O_CREAT in `oflags`,
 * EINVAL with O_EXCL when it exists or without O_CREAT when it does not;
 * fd < 0: a domain of this context alone. */
struct rocemu_xrcd* rocemu_open_xrcd(struct rocemu_context* ctx, int fd,
                                     int oflags);
/* EBUSY while it is the last opener and XRC SRQs or TGT QPs remain. */
int rocemu_close_xrcd(struct rocemu_xrcd* xrcd);
/* An XRC SRQ of `pd` in `xrcd` whose receive completions go to `cq`. */
struct rocemu_srq* rocemu_create_xrc_srq(struct rocemu_pd* pd,
                                         struct rocemu_xrcd* xrcd,
                                         struct rocemu_cq* cq,
                                         struct rocemu_srq_init_attr* attr);
/* ibv_create_srq_ex with IBV_SRQT_TM: a tag-matching SRQ whose receive and
 * list-operation completions go to `cq`, with a matching list of
 * max_num_tags buffers (at most tm_caps.max_num_tags; max_ops likewise). */
struct rocemu_srq* rocemu_create_tm_srq(struct rocemu_pd* pd,
                                        struct rocemu_cq* cq,
                                        struct rocemu_srq_init_attr* attr,
                                        uint32_t max_num_tags,
                                        uint32_t max_ops);
/* ibv_post_srq_ops, one operation (ibv_ops_wr's fields; num_sge 0 or 1).
 * ADD returns the buffer's handle in *handle. */
struct rocemu_srq_op {
  uint64_t wr_id;
  int opcode; /* IBV_WR_TAG_ADD, _DEL, _SYNC */
  int flags;  /* IBV_OPS_SIGNALED, IBV_OPS_TM_SYNC */
  uint32_t unexpected_cnt;
  uint32_t handle;
  uint64_t recv_wr_id;
  struct rocemu_sge* sg_list;
  int num_sge;
  uint64_t tag;
  uint64_t mask;
};
int rocemu_post_srq_op(struct rocemu_srq* srq, const struct rocemu_srq_op* op,
                       uint32_t* handle);
/* ibv_get_srq_num: what an XRC INI QP's requests name (EINVAL: not XRC). */
int rocemu_get_srq_num(struct rocemu_srq* srq, uint32_t* srqn);
/* An XRC TGT QP of `xrcd`: a new one (qpn 0; ibv_create_qp of
 * IBV_QPT_XRC_RECV) or the existing TGT QP `qpn` (ibv_open_qp, from any
 * process that opened the domain). It has no queues: modify, query and
 * destroy only. Destroying drops this opener's hold; the QP goes with the
 * last. An XRC INI QP is made by rocemu_create_qp (ROCEMU_QPT_XRC_SEND, no
 * receive queue, recv_cq may be NULL) and names the target's SRQ in each
 * rocemu_send_wr's remote_srqn. */
struct rocemu_qp* rocemu_open_xrc_tgt_qp(struct rocemu_xrcd* xrcd,
                                         uint32_t qpn);

/* --- asynchronous events --- */
/* Readable (poll/epoll) while events wait. */
int rocemu_async_fd(const struct rocemu_context* ctx);
/* ibv_get_async_event: the next event (timeout_ms < 0: wait for ever;
 * ETIMEDOUT otherwise). Events about objects destroyed since are skipped. */
int rocemu_get_async_event(struct rocemu_context* ctx,
                           struct rocemu_async_event* event, int timeout_ms);
void rocemu_ack_async_event(struct rocemu_async_event* event);
const char* rocemu_event_type_str(int event_type);

const char* rocemu_wc_status_str(int status);

#ifdef __cplusplus
}
#endif

#endif /* ROCEMU_VERBS_ROCEMU_VERBS_H_ */
