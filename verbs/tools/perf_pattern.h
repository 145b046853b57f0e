// The payload rocemu-perf sends with --verify: a seeded pattern that is a
// function of (seed, message index, byte offset), so the receiver can check
// every byte of every message without being told what was sent, and a
// message landing in the wrong place or a stale one is caught. The last byte
// of a message is a marker that differs between consecutive messages: the
// latency tests poll it to see a message arrive.
#ifndef ROCEMU_VERBS_TOOLS_PERF_PATTERN_H_
#define ROCEMU_VERBS_TOOLS_PERF_PATTERN_H_

#include <cstddef>
#include <cstdint>

namespace rocemu::verbs::perf {

// 1..255, never equal for consecutive messages (and never the zero a fresh
// buffer holds).
inline uint8_t Marker(uint64_t msg) {
  return static_cast<uint8_t>(msg % 255 + 1);
}

void FillMessage(uint64_t seed, uint64_t msg, uint8_t* p, size_t len);
// The first offset whose byte differs from FillMessage's, or -1.
int64_t CheckMessage(uint64_t seed, uint64_t msg, const uint8_t* p, size_t len);

// Atomics: the 64-bit value a remote word holds before the k-th operation
// on it. Fetch-and-add adds AtomicAddend(); compare-and-swap swaps
// CasValue(k) for CasValue(k + 1), so every operation must succeed and
// return exactly its expected value.
uint64_t AtomicInitial(uint64_t seed, uint32_t word);
inline uint64_t AtomicAddend(uint32_t word) { return 0x10001ull * (word + 1); }
uint64_t CasValue(uint64_t seed, uint32_t word, uint64_t k);
// What the k-th fetch-and-add on `word` returns.
inline uint64_t FetchAddValue(uint64_t seed, uint32_t word, uint64_t k) {
  return AtomicInitial(seed, word) + k * AtomicAddend(word);
}

}  // namespace rocemu::verbs::perf

#endif  // ROCEMU_VERBS_TOOLS_PERF_PATTERN_H_
