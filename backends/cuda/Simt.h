#pragma once
// SIMT on the CPU: what the host C++ compiler needs to build the CUDA source the CUDA emitter
// writes (CudaEmitter.h) and run its kernels without a GPU. The test suite builds that source with
// `g++ -std=c++20 -include Simt.h -I<cuda>/include/cccl` into a shared object (HostEmulation.h).
//
// The model, in numbered steps:
//   1. A launch of G blocks × T threads starts G·T host threads at once (all co-resident, as a
//      cooperative launch promises), each with its own thread-local blockIdx, threadIdx, blockDim
//      and gridDim, and joins them.
//   2. `__syncthreads()` is a std::barrier of the block's T threads (a happens-before edge for
//      ThreadSanitizer too); dynamic shared memory (`GROVE_DYNAMIC_SHARED`) is one zeroed
//      allocation per block.
//   3. The kernels' own grid barrier is the same libcu++ code as on the device
//      (`cuda::atomic_ref<unsigned, cuda::thread_scope_device>`: release add, acquire spin), which
//      compiles as host C++; cooperative groups' `this_grid().sync()` is emulated the same way over
//      a counter of the launch.
// Not modelled: warps (no __shfl), coalescing, the GPU's weaker memory model (host atomics are at
// least as strong). Keep launches small (the tests use at most 8 × 32 threads).

#include <atomic>
#include <barrier>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <cuda/atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#define GROVE_SIMT_HOST 1

namespace grove_simt {

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

// What the threads of one block share.
struct Block {
  explicit Block(unsigned threads, size_t shared_bytes)
      : barrier(threads), shared((shared_bytes + sizeof(double) - 1) / sizeof(double)) {}
  std::barrier<> barrier;
  std::vector<double> shared;  // dynamic shared memory, zeroed, 8-byte aligned
};

// What the threads of one launch share: the counter behind cooperative groups' grid.sync().
struct Launch {
  unsigned grid_counter = 0;
};

inline thread_local Block *current_block = nullptr;
inline thread_local Launch *current_launch = nullptr;
inline thread_local unsigned grid_epoch = 0;  // cooperative groups' grid.sync() calls so far

}  // namespace grove_simt

inline thread_local grove_simt::dim3 blockIdx, threadIdx, blockDim, gridDim;

// libcu++ may have pulled in the toolkit's host_defines.h (where it finds cuda_runtime_api.h), whose
// definitions of these are attributes g++ does not know: the host build defines them away.
#undef __global__
#undef __device__
#undef __host__
#undef __forceinline__
#undef __launch_bounds__
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define GROVE_DYNAMIC_SHARED(type, name) \
  type *name = reinterpret_cast<type *>(grove_simt::current_block->shared.data())

inline void __syncthreads() { grove_simt::current_block->barrier.arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __nanosleep(unsigned) { std::this_thread::yield(); }

namespace cooperative_groups {

// The grid of the current launch; sync() as the device's: the block meets, one thread per block
// adds to the launch's counter (release) and waits for every block's add of this round (acquire).
struct grid_group {
  void sync() const {
    __syncthreads();
    const unsigned epoch = ++grove_simt::grid_epoch;
    if (threadIdx.x == 0) {
      cuda::atomic_ref<unsigned, cuda::thread_scope_device> c(grove_simt::current_launch->grid_counter);
      c.fetch_add(1, cuda::memory_order_release);
      while (c.load(cuda::memory_order_acquire) < epoch * gridDim.x) std::this_thread::yield();
    }
    __syncthreads();
  }
};
inline grid_group this_grid() { return {}; }

}  // namespace cooperative_groups

namespace grove_simt {

// Runs `kernel` on blocks × threads host threads (step 1 above), `shared_bytes` of dynamic shared
// memory per block.
inline void launch(unsigned blocks, unsigned threads, size_t shared_bytes,
                   const std::function<void()> &kernel) {
  Launch launch;
  std::vector<std::unique_ptr<Block>> block_state;
  for (unsigned b = 0; b < blocks; ++b) block_state.push_back(std::make_unique<Block>(threads, shared_bytes));
  std::vector<std::thread> pool;
  pool.reserve(size_t(blocks) * threads);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t)
      pool.emplace_back([&, b, t] {
        blockIdx = {b, 0, 0};
        threadIdx = {t, 0, 0};
        blockDim = {threads, 1, 1};
        gridDim = {blocks, 1, 1};
        current_block = block_state[b].get();
        current_launch = &launch;
        grid_epoch = 0;
        kernel();
      });
  for (std::thread &thread : pool) thread.join();
}

}  // namespace grove_simt
