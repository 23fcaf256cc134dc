// SPDX-License-Identifier: Apache-2.0
// The host's build of the vector engine's elementwise loops: vector_block
// compiled for the widest vectors this processor has. Optimizer steps on
// the host and the fast sw_emu engine's vector descriptors run here.
#include "systole/vector_ops.h"

namespace systole::spec {
namespace {

using BlockFn = decltype(VectorBlockBuild::run);

void block_baseline(Opcode op, const VectorScalars& s, std::size_t count, const float* x, float* y, float* z,
                    float* w) {
  vector_block(op, s, count, x, y, z, w);
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
// GCC keeps to 256-bit vectors in AVX-512 code unless told otherwise; the
// optimizer's loops (a division and a square root an element) run about
// twice as fast in 512-bit ones.
#if defined(__clang__)
#define SYSTOLE_WIDE_VECTORS __attribute__((target("avx512f,avx512bw,avx512vl"), min_vector_width(512)))
#else
#define SYSTOLE_WIDE_VECTORS __attribute__((target("avx512f,avx512bw,avx512vl,prefer-vector-width=512")))
#endif

SYSTOLE_WIDE_VECTORS void block_avx512(Opcode op, const VectorScalars& s, std::size_t count, const float* x,
                                       float* y, float* z, float* w) {
  vector_block(op, s, count, x, y, z, w);
}

__attribute__((target("avx2"))) void block_avx2(Opcode op, const VectorScalars& s, std::size_t count,
                                                const float* x, float* y, float* z, float* w) {
  vector_block(op, s, count, x, y, z, w);
}

}  // namespace

std::vector<VectorBlockBuild> vector_block_builds() {
  std::vector<VectorBlockBuild> builds = {{"baseline", block_baseline}};
  if (__builtin_cpu_supports("avx2")) builds.push_back({"avx2", block_avx2});
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl"))
    builds.push_back({"avx512", block_avx512});
  return builds;
}
#else
}  // namespace

std::vector<VectorBlockBuild> vector_block_builds() { return {{"baseline", block_baseline}}; }
#endif

void vector_block_host(Opcode op, const VectorScalars& scalars, std::size_t count, const float* x, float* y,
                       float* z, float* w) {
  static const BlockFn block = vector_block_builds().back().run;  // the widest
  block(op, scalars, count, x, y, z, w);
}

}  // namespace systole::spec
