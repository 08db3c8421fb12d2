// The Halide kernel compiler (HalideKernels.h): lowering (HalideOps.cpp), JIT compilation, the
// cache by (function, dtypes, shapes), and running a pipeline on NDArrays without copies.

#include "backends/relay/halide/HalideKernels.h"

#include <Halide.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/relay/halide/HalideLower.h"
#include "backends/relay/halide/ParallelPool.h"
#include "backends/runtime/Team.h"
#include "lowering/cpu/HostTarget.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

// What a kernel's parallel loops find in the user context Halide passes them.
struct PoolContext : Halide::JITUserContext {
  ParallelPool *pool = nullptr;
};

// Halide's do_par_for on the kernel compiler's pool (ParallelPool.h).
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

  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
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
    if (auto it = cache_.find(key); it != cache_.end()) return KernelResult::compiled(it->second.second);

    // What the lowering does not lower, and a pipeline Halide rejects (a gap in the lowering as
    // well), are unsupported: the caller can still fall back.
    halide_internal::LoweredPipeline lowered;
    Halide::Pipeline pipeline;
    try {
      lowered = halide_internal::lower_primitive(*fn, dtypes, shapes, lowering::vector_bytes(target_));
      pipeline = Halide::Pipeline(lowered.outputs);
      pipeline.compile_jit(target_);
    } catch (const halide_internal::NotLowerable &gap) {
      return KernelResult::unsupported(gap.what());
    } catch (const Halide::Error &err) {
      return KernelResult::unsupported(fmt::format("the Halide kernel compiler failed on {} (at {}): {}",
                                                   lowered.ops.empty() ? "a function" : lowered.ops,
                                                   to_string(fn->span), err.what()));
    }
    set_threads();
    auto kernel =
        std::make_shared<HalideKernel>(std::move(lowered), pipeline, target_, dtypes, shapes, pool_);
    cache_.emplace(key, std::make_pair(primitive, kernel));
    return KernelResult::compiled(kernel);
  }

  std::string name() const override { return "halide"; }

 private:
  using Key = std::tuple<const ExprNode *, std::vector<int>, std::vector<Shape>>;

  // Grows Halide's JIT thread pool to the compiler's thread count once it exists (after the first
  // compile): the pool is shared by every JIT-compiled pipeline and model in the process, so it is
  // never shrunk (Team.h, grow_thread_pool).
  void set_threads() {
    if (threads_ <= 0 || threads_set_) return;
    for (const Halide::Internal::JITModule &m :
         Halide::Internal::JITSharedRuntime::get(nullptr, target_, false)) {
      auto symbol = m.find_symbol_by_name("halide_set_num_threads");
      if (symbol.address) {
        grow_thread_pool(reinterpret_cast<int (*)(int)>(symbol.address), threads_);
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
