#include "backends/cuda/KernelArgs.h"

namespace grove::cuda {

CudaLaunch cuda_launch(const CudaSource &source) {
  CudaLaunch l;
  const CudaOptions &o = source.options;
  l.persistent = o.form == Form::Persistent;
  l.blocks = o.blocks;
  l.threads = o.threads;
  l.shared_bytes = source.shared_bytes;
  l.scratch_floats_per_node = source.scratch_floats_per_node;
  l.specialized = source.specialized;
  l.graph = o.graph;
  l.kernels = source.kernels;
  for (const Phase &p : source.hoisted) l.hoisted.push_back(p.kernel);
  for (const Phase &p : source.leaf) l.leaf.push_back(p.kernel);
  for (const Phase &p : source.internal) l.internal.push_back(p.kernel);
  return l;
}

void for_each_launch(const CudaSource &source, int32_t num_levels,
                     const std::function<void(const std::string &kernel, int32_t level)> &launch) {
  for_each_launch(cuda_launch(source), num_levels, launch);
}

}  // namespace grove::cuda
