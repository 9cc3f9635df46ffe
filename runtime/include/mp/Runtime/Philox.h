/*===- Philox.h - the counter-based generator of dropout masks ----*- C -*-===*
 *
 * Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel Random Numbers:
 * As Easy as 1, 2, 3", SC11; the generator of Random123 and cuRAND) and the
 * dropout mask built on it. The mask is a pure function of (seed, stream,
 * element index), so the forward and backward passes recompute the same
 * mask instead of storing it, and every backend draws the same one: this
 * header is compiled into the CPU kernels and the CUDA kernels alike.
 *
 * Element i of a dropout with `seed` and `stream` is kept when
 *   word = philox4x32_10(counter = {lo(i / 4), hi(i / 4), lo(stream),
 *                                   hi(stream)},
 *                        key = {lo(seed), hi(seed)})[i % 4]
 *   (word >> 8) >= ceil(rate * 2^24)
 * that is when the 24-bit uniform (word >> 8) / 2^24 is at least `rate`;
 * kept elements are multiplied by 1 / (1 - rate), computed in f32.
 *
 *===----------------------------------------------------------------------===*/

#ifndef MP_RUNTIME_PHILOX_H
#define MP_RUNTIME_PHILOX_H

#include <stdint.h>

#if defined(__CUDACC__)
#define MP_PHILOX_FN static inline __host__ __device__
#else
#define MP_PHILOX_FN static inline
#endif

typedef struct mpPhilox4x32 {
  uint32_t v[4];
} mpPhilox4x32;

/* One Philox4x32 block: ten rounds of `counter` under `key`. */
MP_PHILOX_FN mpPhilox4x32 mpPhilox4x32_10(mpPhilox4x32 counter, uint32_t k0,
                                          uint32_t k1) {
  for (int round = 0; round < 10; ++round) {
    if (round) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * counter.v[0];
    uint64_t p1 = (uint64_t)0xCD9E8D57u * counter.v[2];
    mpPhilox4x32 next = {{(uint32_t)(p1 >> 32) ^ counter.v[1] ^ k0,
                          (uint32_t)p1,
                          (uint32_t)(p0 >> 32) ^ counter.v[3] ^ k1,
                          (uint32_t)p0}};
    counter = next;
  }
  return counter;
}

/* The 24-bit threshold of `rate` in [0, 1): ceil(rate * 2^24). */
MP_PHILOX_FN uint32_t mpDropoutThreshold(float rate) {
  double t = (double)rate * 16777216.0;
  uint32_t floor = (uint32_t)t;
  return (double)floor == t ? floor : floor + 1;
}

/* The block of four mask words that holds element `4 * block`. */
MP_PHILOX_FN mpPhilox4x32 mpDropoutBlock(uint64_t seed, uint64_t stream,
                                         uint64_t block) {
  mpPhilox4x32 counter = {{(uint32_t)block, (uint32_t)(block >> 32),
                           (uint32_t)stream, (uint32_t)(stream >> 32)}};
  return mpPhilox4x32_10(counter, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* The uniform in [0, 1) of a mask word: its top 24 bits over 2^24. */
MP_PHILOX_FN double mpUniformOfWord(uint32_t word) {
  return (double)(word >> 8) * (1.0 / 16777216.0);
}

/* Whether a mask word keeps its element. */
MP_PHILOX_FN int mpDropoutKeeps(uint32_t word, uint32_t threshold) {
  return (word >> 8) >= threshold;
}

#undef MP_PHILOX_FN

#endif /* MP_RUNTIME_PHILOX_H */
