// A small seeded generator (SplitMix64) for the marking decisions of the
// congestion point: reproducible across runs, platforms and library versions
// (unlike std:: distributions), cheap, and with no hidden global state.
#ifndef ROCEMU_PFC_ECN_RNG_H_
#define ROCEMU_PFC_ECN_RNG_H_

#include <cstdint>

namespace rocemu::pfc_ecn {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}

  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1) with 53 random bits.
  double NextUnit() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

}  // namespace rocemu::pfc_ecn

#endif  // ROCEMU_PFC_ECN_RNG_H_
