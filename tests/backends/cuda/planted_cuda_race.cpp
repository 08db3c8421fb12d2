// A planted race in the CUDA kernels run on the CPU (a GROVE_TSAN build: HostEmulation then builds
// the kernels with -fsanitize=thread). First the persistent TreeLSTM kernel as emitted, which must
// run without a report; then the same source with its level barrier removed, which ThreadSanitizer
// must report (a parent level reads children rows other blocks are still writing). Prints
// "clean kernel: no report" between the two, so the test's expected output pins the order.

#include <cstdio>
#include <string>
#include <vector>

#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/HostEmulation.h"
#include "backends/cuda/KernelArgs.h"
#include "datasets/Generators.h"
#include "frontend/dsl/Frontend.h"
#include "tests/reference/Reference.h"

using namespace grove;

namespace {

// One call of `source` (the plan's kernels) over `trees`, as EmulatedModel::execute runs it.
void run(const plan::LevelPlan &plan, const cuda::CudaSource &source, const Weights &weights,
         const std::vector<Tree> &trees) {
  std::shared_ptr<const cuda::HostKernels> kernels = cuda::HostKernels::build(source);
  InspectorOptions options;
  LinearizedBatch batch = linearize(trees, options);
  std::vector<std::vector<float>> params, packed, states;
  for (const ModelAbi::Param &p : plan.abi.params) params.push_back(weights.at(p.name).data);
  for (const PackedWeight &w : plan.abi.packed) {
    size_t p = 0;
    while (plan.abi.params[p].name != w.param) p++;
    packed.emplace_back(w.size());
    pack(w, params[p].data(), packed.back().data());
  }
  for (const ModelAbi::State &s : plan.abi.states) states.emplace_back(batch.num_nodes * s.row_elements);
  std::vector<float> scratch(batch.num_nodes * source.scratch_floats_per_node + 1);
  unsigned counter = 0;
  cuda::CallBuffers b;
  for (const auto &p : params) b.params.push_back(p.data());
  for (const auto &p : packed) b.packed.push_back(p.data());
  for (auto &s : states) b.states.push_back(s.data());
  b.level_begin = batch.level_begin.data();
  b.child_begin = batch.child_begin.data();
  b.children = batch.children.data();
  b.token = batch.token.data();
  b.team_begin = batch.level_begin.data();  // not read: no unrolling
  b.scratch = scratch.data();
  b.barrier = &counter;
  cuda::KernelArgs args(plan.abi, b, batch.num_levels);
  kernels->launch("grove_persistent", args.argv(), unsigned(source.options.blocks),
                  unsigned(source.options.threads), size_t(source.shared_bytes));
}

}  // namespace

int main() {
  using reference::ModelKind;
  const ilir::Program program = dsl::parse_model_file(GROVE_SOURCE_DIR "/models/treelstm.grove");
  const plan::LevelPlan plan = cuda::plan_for_cuda(program, {{"H", 16}, {"D", 8}, {"V", 20}}, "");
  cuda::CudaSource source =
      cuda::emit_cuda(plan, {.form = cuda::Form::Persistent, .blocks = 3, .threads = 8});
  const Weights weights = reference::random_model_weights(ModelKind::TreeLSTM, 16, 8, 20, 3);
  std::vector<Tree> trees;
  for (int i = 0; i < 4; ++i) trees.push_back(random_binary_tree(10 + i, 3 + 2 * i, 20));
  run(plan, source, weights, trees);
  std::printf("clean kernel: no report\n");
  std::fflush(stdout);
  const std::string barrier = "grid.sync();  // the level reads its children";
  const size_t at = source.text.find(barrier);
  if (at == std::string::npos) return 2;
  source.text.replace(at, 12, "            ");
  run(plan, source, weights, trees);
  std::printf("the kernel without its level barrier ran\n");
  return 0;
}
