// What rides with a frame's mbuf from where it was built or received to
// where it is captured: its packet id (the RNIC's TxFrame::packet_id, or
// the one the port gave a received frame) and what the daemon did to it on
// the way (a fault injected, an ECN mark), in a DPDK dynamic field
// registered once (RegisterMbufTag). Every mbuf the daemon queues or
// receives has its tag set before it is read.
#ifndef ROCEMU_EMULATOR_CAPTURE_MBUF_TAG_H_
#define ROCEMU_EMULATOR_CAPTURE_MBUF_TAG_H_

#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>

#include <cstdint>

#include "nic/drop_reason.h"

namespace rocemu::emulator {

struct MbufTag {
  uint64_t packet_id = 0;
  uint32_t arg = 0;  // the daemon verdict's argument (frame_verdict.h)
  nic::DropReason reason = nic::DropReason::kNone;
};
static_assert(sizeof(MbufTag) == 16);

// The dynamic field's offset in rte_mbuf; -1 until registered.
inline int mbuf_tag_offset = -1;

// After rte_eal_init; registering again (the embedded module) finds the
// same field. Returns false if DPDK refused.
inline bool RegisterMbufTag() {
  static const rte_mbuf_dynfield kDesc = {"rocemu_mbuf_tag", sizeof(MbufTag),
                                          alignof(MbufTag), 0};
  mbuf_tag_offset = rte_mbuf_dynfield_register(&kDesc);
  return mbuf_tag_offset >= 0;
}

inline MbufTag& Tag(rte_mbuf* m) {
  return *RTE_MBUF_DYNFIELD(m, mbuf_tag_offset, MbufTag*);
}

}  // namespace rocemu::emulator

#endif  // ROCEMU_EMULATOR_CAPTURE_MBUF_TAG_H_
