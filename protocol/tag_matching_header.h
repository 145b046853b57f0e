// The headers of tag-matching messages (rdma-core's
// Documentation/tag_matching.md, <infiniband/tm_types.h>). They are not
// transport headers: they ride at the start of an RC SEND's payload, and
// only a receiver whose SRQ is a tag-matching SRQ reads them.
//
//   TMH (16 bytes): operation (1), reserved (3), app_ctx (4, opaque to the
//                   RNIC), tag (8); all big-endian.
//   RVH (16 bytes, rendezvous requests, after the TMH): the sender's buffer
//                   as virtual address (8), R_Key (4) and length (4).
#ifndef ROCEMU_PROTOCOL_TAG_MATCHING_HEADER_H_
#define ROCEMU_PROTOCOL_TAG_MATCHING_HEADER_H_

#include <cstdint>
#include <optional>
#include <span>

#include "protocol/wire.h"

namespace rocemu::protocol {

// ibv_tmh_op.
enum class TmhOp : uint8_t { kNoTag = 0, kRndv = 1, kFin = 2, kEager = 3 };

struct Tmh {
  TmhOp op = TmhOp::kNoTag;
  uint32_t app_ctx = 0;
  uint64_t tag = 0;
};

struct Rvh {
  uint64_t va = 0;
  uint32_t rkey = 0;
  uint32_t len = 0;
};

inline constexpr uint32_t kTmhLen = 16;
inline constexpr uint32_t kRvhLen = 16;

// The TMH at the start of `payload`; nullopt if the payload is shorter. The
// operation byte is taken as it is (an unknown one is the caller's to
// judge).
inline std::optional<Tmh> ParseTmh(std::span<const uint8_t> payload) {
  if (payload.size() < kTmhLen) return std::nullopt;
  return Tmh{static_cast<TmhOp>(payload[0]), LoadBe32(payload.data() + 4),
             LoadBe64(payload.data() + 8)};
}

// The RVH after the TMH; nullopt if the payload is shorter than both.
inline std::optional<Rvh> ParseRvh(std::span<const uint8_t> payload) {
  if (payload.size() < kTmhLen + kRvhLen) return std::nullopt;
  const uint8_t* p = payload.data() + kTmhLen;
  return Rvh{LoadBe64(p), LoadBe32(p + 8), LoadBe32(p + 12)};
}

// Writes TMH | RVH (32 bytes) to `out`: the rendezvous FIN the receiver
// returns once its RDMA READ is done is the request's TMH and RVH with the
// operation FIN.
inline void WriteTmhRvh(const Tmh& tmh, const Rvh& rvh, uint8_t* out) {
  out[0] = static_cast<uint8_t>(tmh.op);
  out[1] = out[2] = out[3] = 0;
  StoreBe32(out + 4, tmh.app_ctx);
  StoreBe64(out + 8, tmh.tag);
  StoreBe64(out + 16, rvh.va);
  StoreBe32(out + 24, rvh.rkey);
  StoreBe32(out + 28, rvh.len);
}

}  // namespace rocemu::protocol

#endif  // ROCEMU_PROTOCOL_TAG_MATCHING_HEADER_H_
