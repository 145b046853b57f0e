// Moving bytes between a work request's scatter/gather list and packets.
// A message is produced or consumed one MTU-sized packet at a time, so the
// position inside the SG list is kept in a cursor and each call continues
// where the previous one stopped. Every SGE is checked against the MR table
// when first touched (L_Key, PD, rights, bounds), as rxe does at copy time.
#ifndef ROCEMU_NIC_SG_COPY_H_
#define ROCEMU_NIC_SG_COPY_H_

#include <cstdint>
#include <span>

#include "nic/access.h"
#include "nic/handles.h"
#include "nic/mr_status.h"
#include "nic/mr_table.h"
#include "nic/work_request.h"

namespace rocemu::nic {

// A position inside an SG list: entry `sge`, byte `offset` within it.
struct SgCursor {
  uint32_t sge = 0;
  uint32_t offset = 0;
};

// Checks every entry of `sges` against `mrs` (L_Key in `pd`, rights `need`,
// bounds). Lets a post path reject a bad WR up front; the copy functions
// check again, so this is optional.
MrStatus CheckSgList(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
                     AccessFlags need);

// Copies the next dst.size() bytes of the SG list's data into dst (send
// payload, READ request data source). Returns kLengthExceeded, with *copied
// short, when the list ends first; a key failure stops the copy there.
// Pieces in process regions are copied with one process_vm call per run of
// the same process (all the run's pieces as iovecs); kFault when the target
// refused (the bytes of dst are then unspecified).
MrStatus Gather(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
                SgCursor& cursor, std::span<uint8_t> dst,
                size_t* copied = nullptr);

// Places src into the SG list's buffers from the cursor on (receive buffer,
// READ response destination); needs local write on every region touched.
// kLengthExceeded when the list has no room for all of src (nothing past the
// end is written); kFault as for Gather.
MrStatus Scatter(const MrTable& mrs, PdHandle pd, std::span<const Sge> sges,
                 SgCursor& cursor, std::span<const uint8_t> src);

// The cursor `offset` bytes into the list, on a non-empty entry: where a
// message's packet after the first resumes (send payload, receive buffer,
// READ response destination).
SgCursor SeekSg(std::span<const Sge> sges, uint64_t offset);

// Bytes left in the list from the cursor on.
uint64_t SgRemaining(std::span<const Sge> sges, const SgCursor& cursor);

}  // namespace rocemu::nic

#endif  // ROCEMU_NIC_SG_COPY_H_
