#include "verbs/tools/perf_pattern.h"

#include <cstring>

#include "verbs/tools/splitmix64.h"

namespace rocemu::verbs::perf {
namespace {

// A per-message key, then one splitmix64 word per 8 bytes of offset.
uint64_t MessageKey(uint64_t seed, uint64_t msg) {
  return SplitMix64(seed * 0x100000001B3ull ^ SplitMix64(msg));
}

uint64_t Word(uint64_t key, size_t word) { return SplitMix64(key + word); }

}  // namespace

void FillMessage(uint64_t seed, uint64_t msg, uint8_t* p, size_t len) {
  if (len == 0) return;
  const uint64_t key = MessageKey(seed, msg);
  size_t off = 0;
  for (size_t w = 0; off + 8 <= len; ++w, off += 8) {
    const uint64_t v = Word(key, w);
    std::memcpy(p + off, &v, 8);
  }
  if (off < len) {
    const uint64_t v = Word(key, off / 8);
    std::memcpy(p + off, &v, len - off);
  }
  p[len - 1] = Marker(msg);
}

int64_t CheckMessage(uint64_t seed, uint64_t msg, const uint8_t* p,
                     size_t len) {
  if (len == 0) return -1;
  const uint64_t key = MessageKey(seed, msg);
  const size_t body = len - 1;  // the marker is checked last
  size_t off = 0;
  for (size_t w = 0; off + 8 <= body; ++w, off += 8) {
    const uint64_t want = Word(key, w);
    uint64_t got;
    std::memcpy(&got, p + off, 8);
    if (got != want) {
      for (size_t i = 0; i < 8; ++i) {
        if (p[off + i] != static_cast<uint8_t>(want >> (8 * i))) {
          return static_cast<int64_t>(off + i);
        }
      }
    }
  }
  if (off < body) {
    const uint64_t want = Word(key, off / 8);
    for (size_t i = 0; off + i < body; ++i) {
      if (p[off + i] != static_cast<uint8_t>(want >> (8 * i))) {
        return static_cast<int64_t>(off + i);
      }
    }
  }
  if (p[len - 1] != Marker(msg)) return static_cast<int64_t>(len - 1);
  return -1;
}

uint64_t AtomicInitial(uint64_t seed, uint32_t word) {
  // Keep headroom so fetch-and-add sequences never wrap in a test.
  return SplitMix64(seed ^ (0xA70111CULL + word)) >> 8;
}

uint64_t CasValue(uint64_t seed, uint32_t word, uint64_t k) {
  return k == 0 ? AtomicInitial(seed, word)
                : SplitMix64(AtomicInitial(seed, word) + k);
}

}  // namespace rocemu::verbs::perf
