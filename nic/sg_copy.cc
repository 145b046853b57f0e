#include "nic/sg_copy.h"

#include <algorithm>

#include "nic/process_memory.h"

namespace rocemu::nic {

MrStatus CheckSgList(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
                     AccessFlags need) {
  for (const Sge& s : sges) {
    const MemoryRegion* mr;
    MrStatus st = mrs.CheckLocal(s.lkey, pd, s.addr, s.length, need, &mr);
    if (st != MrStatus::kOk) return st;
  }
  return MrStatus::kOk;
}

namespace {

// Walks the SG list from the cursor over `n` bytes, calling
// f(region, va, offset_in_buffer, len) per contiguous piece; f returns an
// MrStatus and a failure stops the walk.
template <typename F>
MrStatus Walk(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
              SgCursor& cursor, size_t n, AccessFlags need, size_t* done_out,
              F&& f) {
  size_t done = 0;
  MrStatus st = MrStatus::kOk;
  while (done < n) {
    if (cursor.sge >= sges.size()) {
      st = MrStatus::kLengthExceeded;
      break;
    }
    const Sge& s = sges[cursor.sge];
    if (cursor.offset >= s.length) {
      ++cursor.sge;
      cursor.offset = 0;
      continue;
    }
    const uint64_t take =
        std::min<uint64_t>(s.length - cursor.offset, n - done);
    const MemoryRegion* mr;
    st = mrs.CheckLocal(s.lkey, pd, s.addr + cursor.offset, take, need, &mr);
    if (st != MrStatus::kOk) break;
    st = f(*mr, s.addr + cursor.offset, done, static_cast<size_t>(take));
    if (st != MrStatus::kOk) break;
    done += static_cast<size_t>(take);
    cursor.offset += static_cast<uint32_t>(take);
  }
  if (done_out != nullptr) *done_out = done;
  return st;
}

}  // namespace

MrStatus Gather(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
                SgCursor& cursor, std::span<uint8_t> dst, size_t* copied) {
  ProcessVmBatch batch(/*write=*/false);
  MrStatus st =
      Walk(mrs, pd, sges, cursor, dst.size(), access::kNone, copied,
           [&](const MemoryRegion& mr, uint64_t va, size_t at, size_t len) {
             if (mr.kind() == MrKind::kHost)
               return mr.CopyOut(va, dst.subspan(at, len));
             return batch.Add(mr.pid(), dst.data() + at, va, len);
           });
  const MrStatus flushed = batch.Flush();
  return st == MrStatus::kOk ? flushed : st;
}

MrStatus Scatter(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
                 SgCursor& cursor, std::span<const uint8_t> src) {
  // Refuse up front rather than write a truncated message.
  if (SgRemaining(sges, cursor) < src.size()) return MrStatus::kLengthExceeded;
  ProcessVmBatch batch(/*write=*/true);
  MrStatus st =
      Walk(mrs, pd, sges, cursor, src.size(), access::kLocalWrite, nullptr,
           [&](const MemoryRegion& mr, uint64_t va, size_t at, size_t len) {
             if (mr.kind() == MrKind::kHost)
               return mr.CopyIn(va, src.subspan(at, len));
             // process_vm_writev only reads the local side.
             return batch.Add(mr.pid(), const_cast<uint8_t*>(src.data()) + at,
                              va, len);
           });
  const MrStatus flushed = batch.Flush();
  return st == MrStatus::kOk ? flushed : st;
}

SgCursor SeekSg(std::span<const Sge> sges, uint64_t offset) {
  SgCursor c;
  while (c.sge < sges.size() && offset >= sges[c.sge].length &&
         sges[c.sge].length != 0) {
    offset -= sges[c.sge].length;
    ++c.sge;
  }
  while (c.sge < sges.size() && sges[c.sge].length == 0) ++c.sge;
  c.offset = static_cast<uint32_t>(offset);
  return c;
}

uint64_t SgRemaining(std::span<const Sge> sges, const SgCursor& cursor) {
  uint64_t n = 0;
  for (size_t i = cursor.sge; i < sges.size(); ++i) {
    const uint32_t skip = (i == cursor.sge) ? cursor.offset : 0;
    if (sges[i].length > skip) n += sges[i].length - skip;
  }
  return n;
}

}  // namespace rocemu::nic
