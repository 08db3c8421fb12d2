#pragma once
// The training driver's random numbers, the same on every platform and standard library: a
// counter-based hash (SplitMix64's finalizer) of a key, so that a value depends only on what it is
// for — (seed, step, node, element) for a dropout mask, (seed, epoch) for a shuffle — and never on
// how many values were drawn before it.

#include <cstdint>
#include <initializer_list>
#include <utility>
#include <vector>

namespace grove::training {

// SplitMix64's output function: a bijection of 64-bit words that mixes every bit into every other.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// The hash of a key of several words: each word mixed into the running hash in turn.
inline uint64_t hash_key(std::initializer_list<uint64_t> words) {
  uint64_t h = 0x6A09E667F3BCC909ull;
  for (uint64_t w : words) h = mix64(h ^ w);
  return h;
}

// A word as a uniform double in [0, 1): its top 53 bits.
inline double unit_double(uint64_t word) { return static_cast<double>(word >> 11) * 0x1.0p-53; }

// A uniform integer in [0, n) from a word (Lemire's multiply-shift; the bias is below n / 2^64).
inline uint64_t below(uint64_t word, uint64_t n) {
  return static_cast<uint64_t>((static_cast<unsigned __int128>(word) * n) >> 64);
}

// A stream of words from a key: word i is hash(key, i).
class HashStream {
 public:
  explicit HashStream(uint64_t key) : key_(key) {}
  uint64_t next() { return hash_key({key_, counter_++}); }

 private:
  uint64_t key_;
  uint64_t counter_ = 0;
};

// 0..n-1 shuffled by Fisher-Yates with the words of hash(seed, epoch).
inline std::vector<int64_t> shuffled_order(int64_t n, uint64_t seed, uint64_t epoch) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  HashStream words(hash_key({seed, epoch, 0x5348554646ull /* "SHUFF" */}));
  for (int64_t i = n - 1; i > 0; --i) {
    auto j = static_cast<int64_t>(below(words.next(), static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

}  // namespace grove::training
