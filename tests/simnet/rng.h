// The simulator's only source of randomness. Sampling is done here with
// integer arithmetic so that a run depends on the seed alone, not on how a
// given standard library implements its distributions.
#ifndef ROCEMU_TESTS_SIMNET_RNG_H_
#define ROCEMU_TESTS_SIMNET_RNG_H_

#include <cmath>
#include <cstdint>
#include <random>

namespace rocemu::simnet {

// SplitMix64 finaliser: spreads (seed, stream) pairs so that neighbouring
// stream numbers give unrelated generators.
constexpr uint64_t Mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A probability fixed at configuration time as a 64-bit threshold, so that a
// draw is one integer compare.
class Probability {
 public:
  Probability() = default;
  explicit Probability(double p) {
    if (!(p > 0.0)) return;  // also catches NaN
    if (p >= 1.0) {
      always_ = true;
      return;
    }
    threshold_ = static_cast<uint64_t>(std::ldexp(p, 64));
  }
  bool never() const { return !always_ && threshold_ == 0; }
  bool always() const { return always_; }
  uint64_t threshold() const { return threshold_; }

 private:
  uint64_t threshold_ = 0;
  bool always_ = false;
};

class Rng {
 public:
  explicit Rng(uint64_t seed = 0) : engine_(seed) {}
  Rng(uint64_t seed, uint64_t stream) : engine_(Mix64(seed ^ Mix64(stream))) {}

  uint64_t Next() { return engine_(); }

  // Uniform in [0, n), n > 0: Lemire's multiply-shift with rejection, so
  // there is no modulo bias.
  uint64_t Uniform(uint64_t n) {
    unsigned __int128 m = static_cast<unsigned __int128>(Next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      const uint64_t reject_below = (0 - n) % n;
      while (low < reject_below) {
        m = static_cast<unsigned __int128>(Next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }

  // Draws nothing when p is 0 or 1: a disabled impairment consumes no
  // randomness.
  bool Bernoulli(const Probability& p) {
    if (p.never()) return false;
    if (p.always()) return true;
    return Next() < p.threshold();
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace rocemu::simnet

#endif  // ROCEMU_TESTS_SIMNET_RNG_H_
