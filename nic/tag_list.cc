#include "nic/tag_list.h"

#include "absl/strings/str_format.h"

namespace rocemu::nic {

absl::StatusOr<uint32_t> TagList::Add(const TaggedBuffer& b) {
  for (uint32_t i = 0; i < entries_.size(); ++i) {
    Entry& e = entries_[i];
    if (e.valid) continue;
    e.buf = b;
    e.seq = next_seq_++;
    e.valid = true;
    e.eligible = in_sync();
    ++size_;
    return i;
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the tag list holds max_num_tags (%u) buffers", entries_.size()));
}

bool TagList::Del(uint32_t handle) {
  if (handle >= entries_.size() || !entries_[handle].valid) return false;
  entries_[handle].valid = false;
  --size_;
  return true;
}

int TagList::Find(uint64_t tag) const {
  int best = -1;
  for (size_t i = 0; i < entries_.size(); ++i) {
    const Entry& e = entries_[i];
    if (!e.valid || !e.eligible || (tag & e.buf.mask) != e.buf.tag) continue;
    if (best < 0 || e.seq < entries_[best].seq) best = static_cast<int>(i);
  }
  return best;
}

bool TagList::Match(uint64_t tag, TaggedBuffer* out) {
  const int i = Find(tag);
  if (i < 0) return false;
  *out = entries_[i].buf;
  entries_[i].valid = false;
  --size_;
  return true;
}

}  // namespace rocemu::nic
