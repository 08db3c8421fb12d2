// The Halide kernel compiler (HalideKernels.h): lowering (HalideOps.cpp), JIT compilation, the
// cache by (function, dtypes, shapes), and running a pipeline on NDArrays without copies.

#include "backends/relay/HalideKernels.h"

#include <Halide.h>
#include <fmt/format.h>
#include <immintrin.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/relay/HalideLower.h"
#include "ilir/Error.h"
#include "lowering/HostTarget.h"

namespace grove::relay {
namespace {

int vector_bytes(const Halide::Target &target) {
  if (target.has_feature(Halide::Target::AVX512) || target.has_feature(Halide::Target::AVX512_Skylake) ||
      target.has_feature(Halide::Target::AVX512_Cannonlake) ||
      target.has_feature(Halide::Target::AVX512_SapphireRapids))
    return 64;
  if (target.has_feature(Halide::Target::AVX) || target.has_feature(Halide::Target::AVX2)) return 32;
  return 16;
}

// The parallel loops of the compiled kernels (Halide's do_par_for, replaced through the JIT
// handlers). Halide's own pool puts an idle worker to sleep at once and the caller sleeps until the
// last task ends, so on a VM each parallel loop pays two wake-ups of several µs: a GEMV of 12 µs
// (1 x 256 x 1024) ran slower on 2 threads than on 1. This pool, like OpenBLAS's, keeps its workers
// spinning for kSpinUs after a loop and sleeps only then, and the caller waits by spinning.
//   1. The caller publishes the loop: each thread t (the caller is 0) gets a home range, the t-th
//      of T equal slices of [min, min + extent), so that consecutive calls of a kernel hand each
//      thread the same slice and it finds its part of the operands in its own cache (a GEMV's
//      weight rows: 0.5 MB a core at N = 1024, K = 256).
//   2. Every thread runs tasks from its home range, then steals from the others' ranges. A range is
//      one 64-bit word, (generation << 32) | next task; a task is claimed by a compare-and-swap
//      that also checks the generation, so a worker that wakes late can never claim a task of a
//      later loop with an earlier loop's function.
//   3. The caller returns when all tasks have finished. Nested loops, a second caller while one
//      loop runs, and a pool of one thread run the loop serially.
class ParallelPool {
 public:
  using Task = int (*)(Halide::JITUserContext *, int, uint8_t *);

  explicit ParallelPool(int threads) : slots_(std::max(threads, 1)) {
    for (int t = 1; t < static_cast<int>(slots_.size()); ++t) workers_.emplace_back([this, t] { work(t); });
  }
  ~ParallelPool() {
    stop_.store(true);
    generation_.fetch_add(1);
    generation_.notify_all();
    for (std::thread &w : workers_) w.join();
  }

  int par_for(Halide::JITUserContext *context, Task task, int min, int extent, uint8_t *closure) {
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (in_task_ || workers_.empty() || extent <= 1 || !busy.owns_lock()) {
      for (int i = min; i < min + extent; ++i)
        if (int status = task(context, i, closure)) return status;
      return 0;
    }
    const uint64_t gen = generation_.load() + 1;
    task_.store(task, std::memory_order_relaxed);
    context_.store(context, std::memory_order_relaxed);
    closure_.store(closure, std::memory_order_relaxed);
    const int threads = static_cast<int>(slots_.size());
    for (int t = 0; t < threads; ++t) {
      const int64_t begin = min + static_cast<int64_t>(extent) * t / threads;
      slots_[t].end.store(static_cast<int>(min + static_cast<int64_t>(extent) * (t + 1) / threads),
                          std::memory_order_relaxed);
      slots_[t].next.store(gen << 32 | static_cast<uint32_t>(begin), std::memory_order_relaxed);
    }
    done_.store(0, std::memory_order_relaxed);
    error_.store(0, std::memory_order_relaxed);
    generation_.store(static_cast<uint32_t>(gen));
    if (sleeping_.load() > 0) generation_.notify_all();
    run_tasks(static_cast<uint32_t>(gen), 0);
    for (int spins = 0; done_.load(std::memory_order_acquire) < extent; ++spins) {
      _mm_pause();
      if (spins > 4096) std::this_thread::yield();  // a worker was preempted inside a task
    }
    return error_.load();
  }

 private:
  static constexpr int kSpinUs = 50;
  // One cache line per home range: the words are written by every claim.
  struct alignas(64) Slot {
    std::atomic<uint64_t> next{0};
    std::atomic<int> end{0};
  };

  void work(int t) {
    uint32_t seen = 0;  // not loaded here: a loop or the stop may have been published already
    while (true) {
      auto start = std::chrono::steady_clock::now();
      for (int spins = 0; generation_.load(std::memory_order_acquire) == seen; ++spins) {
        _mm_pause();
        if ((spins & 255) != 255) continue;
        // Yielding now and then lets a thread that shares the core run (another process on a busy
        // machine): pausing alone, the worker took CPU time from the caller while other processes
        // ran, and a GEMV of 1 x 256 x 1024 ran at half its one-thread speed (18 against 38
        // GFLOP/s; 37 yielding every 16 pauses). Every 256 keeps the quiet machine's speed (69
        // GFLOP/s; 54 yielding every 16).
        std::this_thread::yield();
        if (std::chrono::steady_clock::now() - start > std::chrono::microseconds(kSpinUs)) {
          sleeping_.fetch_add(1);
          generation_.wait(seen);
          sleeping_.fetch_sub(1);
          start = std::chrono::steady_clock::now();
        }
      }
      if (stop_.load()) return;
      seen = generation_.load(std::memory_order_acquire);
      run_tasks(seen, t);
    }
  }

  // Runs thread t's home range, then steals; only tasks of generation `gen`.
  void run_tasks(uint32_t gen, int t) {
    Task task = task_.load(std::memory_order_relaxed);
    Halide::JITUserContext *context = context_.load(std::memory_order_relaxed);
    uint8_t *closure = closure_.load(std::memory_order_relaxed);
    const int threads = static_cast<int>(slots_.size());
    in_task_ = true;
    for (int k = 0; k < threads; ++k) {
      Slot &slot = slots_[(t + k) % threads];
      uint64_t word = slot.next.load(std::memory_order_acquire);
      while (static_cast<uint32_t>(word >> 32) == gen) {
        const int i = static_cast<int>(static_cast<uint32_t>(word));
        if (i >= slot.end.load(std::memory_order_relaxed)) break;
        if (!slot.next.compare_exchange_weak(word, word + 1, std::memory_order_acq_rel)) continue;
        if (int status = task(context, i, closure)) {
          int none = 0;
          error_.compare_exchange_strong(none, status);
        }
        done_.fetch_add(1, std::memory_order_release);
        word = slot.next.load(std::memory_order_acquire);
      }
    }
    in_task_ = false;
  }

  std::vector<Slot> slots_;
  std::vector<std::thread> workers_;
  std::mutex busy_;
  std::atomic<uint32_t> generation_{0};
  std::atomic<int> sleeping_{0}, done_{0}, error_{0};
  std::atomic<bool> stop_{false};
  std::atomic<Task> task_{nullptr};
  std::atomic<Halide::JITUserContext *> context_{nullptr};
  std::atomic<uint8_t *> closure_{nullptr};
  static thread_local bool in_task_;
};

thread_local bool ParallelPool::in_task_ = false;

// What a kernel's parallel loops find in the user context Halide passes them.
struct PoolContext : Halide::JITUserContext {
  ParallelPool *pool = nullptr;
};

int pool_do_par_for(Halide::JITUserContext *context, ParallelPool::Task task, int min, int extent,
                    uint8_t *closure) {
  return static_cast<PoolContext *>(context)->pool->par_for(context, task, min, extent, closure);
}

// A Halide buffer over an NDArray's storage (row-major, so Halide's dimension 0 is the last one).
Halide::Buffer<> wrap(const NDArray &a, const Halide::Type &type) {
  std::vector<int> sizes;
  for (size_t d = a.shape().size(); d-- > 0;) sizes.push_back(static_cast<int>(a.shape()[d]));
  // Inputs are only read: the pipeline's input buffers are never written.
  return Halide::Buffer<>(type, const_cast<std::byte *>(a.raw()), sizes);
}

class HalideKernel : public Kernel {
 public:
  HalideKernel(halide_internal::LoweredPipeline lowered, Halide::Pipeline pipeline, Halide::Target target,
               std::vector<DType> dtypes, std::vector<Shape> shapes, std::shared_ptr<ParallelPool> pool)
      : lowered_(std::move(lowered)),
        pipeline_(std::move(pipeline)),
        target_(target),
        dtypes_(std::move(dtypes)),
        shapes_(std::move(shapes)),
        pool_(std::move(pool)) {}

  std::vector<NDArray> run(const std::vector<NDArray> &inputs) override {
    if (inputs.size() != dtypes_.size())
      user_error("the Halide kernel {} takes {} inputs, found {}", lowered_.ops, dtypes_.size(),
                 inputs.size());
    Halide::ParamMap params;
    std::vector<Halide::Buffer<>> in_buffers;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype() != dtypes_[i] || inputs[i].shape() != shapes_[i])
        user_error("the Halide kernel {} was compiled for a {} input {} of shape {}, found {} of shape {}",
                   lowered_.ops, to_string(dtypes_[i]), i, shape_to_string(shapes_[i]),
                   to_string(inputs[i].dtype()), shape_to_string(inputs[i].shape()));
      in_buffers.push_back(wrap(inputs[i], lowered_.inputs[i].type()));
      params.set(lowered_.inputs[i], in_buffers.back());
    }
    std::vector<NDArray> outputs;
    std::vector<Halide::Buffer<>> out_buffers;
    for (size_t i = 0; i < lowered_.outputs.size(); ++i) {
      outputs.emplace_back(lowered_.out_dtypes[i], lowered_.out_shapes[i]);
      out_buffers.push_back(wrap(outputs.back(), lowered_.outputs[i].output_types()[0]));
    }
    Halide::Realization realization(out_buffers);
    PoolContext context;
    context.pool = pool_.get();
    context.handlers.custom_do_par_for = pool_do_par_for;
    try {
      pipeline_.realize(&context, std::move(realization), target_, params);
    } catch (const Halide::Error &err) {
      // Shapes and dtypes were checked above: a failing pipeline is a bug in the lowering.
      internal_error(__FILE__, __LINE__,
                     fmt::format("the Halide kernel {} failed: {}", lowered_.ops, err.what()));
    }
    return outputs;
  }

  std::string describe() const override { return "halide: " + lowered_.ops; }

 private:
  halide_internal::LoweredPipeline lowered_;
  Halide::Pipeline pipeline_;
  Halide::Target target_;
  std::vector<DType> dtypes_;
  std::vector<Shape> shapes_;
  std::shared_ptr<ParallelPool> pool_;
};

// The pool's size: the compiler's thread count, else HL_NUM_THREADS, else the cores, as Halide's.
int pool_threads(int threads) {
  if (threads > 0) return threads;
  if (const char *env = std::getenv("HL_NUM_THREADS"); env && std::atoi(env) > 0) return std::atoi(env);
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

class HalideKernelCompiler : public KernelCompiler {
 public:
  explicit HalideKernelCompiler(const HalideKernelOptions &options) : threads_(options.threads) {
    if (options.target == "host") {
      target_ = lowering::host_target();
    } else {
      if (!Halide::Target::validate_target_string(options.target))
        user_error("\"{}\" is not a Halide target (e.g. host, x86-64-linux-avx2)", options.target);
      target_ = Halide::Target(options.target);
    }
    pool_ = std::make_shared<ParallelPool>(pool_threads(options.threads));
  }

  std::shared_ptr<Kernel> compile(const Expr &primitive, const std::vector<DType> &dtypes,
                                  const std::vector<Shape> &shapes) override {
    const auto *fn = primitive.as<Function>();
    if (!fn || !fn->has_attr(attr::kPrimitive))
      user_error("the Halide kernel compiler compiles Primitive functions only (at {})",
                 to_string(primitive->span));
    if (dtypes.size() != shapes.size())
      user_error("{} dtypes for {} input shapes (at {})", dtypes.size(), shapes.size(), to_string(fn->span));
    for (const Shape &s : shapes)
      for (int64_t d : s)
        if (d < 0)
          user_error("the Halide kernel compiler needs concrete input shapes, found {} (at {})",
                     shape_to_string(s), to_string(fn->span));
    std::vector<int> dtype_key;
    for (DType d : dtypes) dtype_key.push_back(static_cast<int>(d));
    Key key{primitive.get(), dtype_key, shapes};
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return it->second.second;

    // A pipeline Halide rejects is a gap in the lowering; the caller can still fall back.
    halide_internal::LoweredPipeline lowered;
    Halide::Pipeline pipeline;
    try {
      lowered = halide_internal::lower_primitive(*fn, dtypes, shapes, vector_bytes(target_));
      pipeline = Halide::Pipeline(lowered.outputs);
      pipeline.compile_jit(target_);
    } catch (const Halide::Error &err) {
      user_error("the Halide kernel compiler failed on {} (at {}): {}",
                 lowered.ops.empty() ? "a function" : lowered.ops, to_string(fn->span), err.what());
    }
    set_threads();
    auto kernel =
        std::make_shared<HalideKernel>(std::move(lowered), pipeline, target_, dtypes, shapes, pool_);
    cache_.emplace(key, std::make_pair(primitive, kernel));
    return kernel;
  }

  std::string name() const override { return "halide"; }

 private:
  using Key = std::tuple<const ExprNode *, std::vector<int>, std::vector<Shape>>;

  // Sizes Halide's JIT thread pool once it exists (after the first compile): the pool is shared by
  // every JIT-compiled pipeline in the process.
  void set_threads() {
    if (threads_ <= 0 || threads_set_) return;
    for (const Halide::Internal::JITModule &m :
         Halide::Internal::JITSharedRuntime::get(nullptr, target_, false)) {
      auto symbol = m.find_symbol_by_name("halide_set_num_threads");
      if (symbol.address) {
        reinterpret_cast<int (*)(int)>(symbol.address)(threads_);
        threads_set_ = true;
        return;
      }
    }
  }

  Halide::Target target_;
  int threads_;
  bool threads_set_ = false;
  std::shared_ptr<ParallelPool> pool_;  // shared with the kernels, which may outlive the compiler
  std::mutex mutex_;
  // The function is held so that its node (the key) outlives the entry.
  std::map<Key, std::pair<Expr, std::shared_ptr<Kernel>>> cache_;
};

}  // namespace

std::unique_ptr<KernelCompiler> make_halide_kernel_compiler(const HalideKernelOptions &options) {
  return std::make_unique<HalideKernelCompiler>(options);
}

}  // namespace grove::relay
