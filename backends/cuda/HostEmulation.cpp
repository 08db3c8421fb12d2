#include "backends/cuda/HostEmulation.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <functional>
#include <mutex>

#include "backends/cuda/KernelArgs.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/SimtText.h"
#include "backends/runtime/SharedObject.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_messages;

namespace {

constexpr char kWho[] = "the CUDA emulation";

using HostLaunch = void (*)(void **args, unsigned blocks, unsigned threads, unsigned long shared_bytes);

// The flags of a host build: C++20 (std::barrier), libcu++ from the toolkit, no fast-math (the
// kernels round as the CPU back end does), ThreadSanitizer when grove itself runs under it.
std::string host_flags() {
  std::string flags =
      "-std=c++20 -O1 -fPIC -shared -pthread -ffp-contract=off -I" GROVE_CUDA_ROOT "/include/cccl";
#if defined(__SANITIZE_THREAD__)
  flags += " -fsanitize=thread";
#endif
  if (const char *extra = std::getenv("GROVE_CUDA_HOST_FLAGS"); extra && *extra)
    flags += std::string(" ") + extra;
  return flags;
}

// Simt.h and its precompiled form (the libcu++ and standard headers it includes are most of a
// build's time), written once per process to a private directory that lives as long as the process;
// `-include DIR/Simt.h` picks up DIR/Simt.h.gch when it was built with the same flags. If the
// precompiled header cannot be built, builds parse the header instead.
const std::string &simt_header(const std::string &cxx) {
  static const TempDir dir("grove-cuda-simt", kWho);
  static const std::string header = [&] {
    const std::string path = dir.path() + "/Simt.h";
    write_text_file(path, kSimtHeaderText, kWho);
    run_command(fmt::format("{} {} -x c++-header {} -o {} 2>&1", cxx, host_flags(), shell_quote(path),
                            shell_quote(path + ".gch")),
                kWho);
    return path;
  }();
  return header;
}

}  // namespace

struct HostKernels::Impl {
  std::unique_ptr<TempDir> dir;  // holds the shared object while the build lives
  std::string path;
  Library library;
  std::map<std::string, HostLaunch> entries;
};

HostKernels::HostKernels(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HostKernels::~HostKernels() = default;

// Steps: write the source to a private directory; `$CXX <flags> -include Simt.h`; dlopen
// the result (RTLD_LOCAL: every build keeps its own symbols); look up each kernel's host launcher.
std::shared_ptr<const HostKernels> HostKernels::build(const CudaSource &source) {
  static std::mutex lock;
  static std::map<std::string, std::weak_ptr<const HostKernels>> cache;
  std::lock_guard guard(lock);
  if (auto it = cache.find(source.text); it != cache.end())
    if (std::shared_ptr<const HostKernels> built = it->second.lock()) return built;

  const char *cxx_env = std::getenv("CXX");
  const std::string cxx = cxx_env && *cxx_env ? cxx_env : "c++";
  const std::string &header = simt_header(cxx);
  auto dir = std::make_unique<TempDir>("grove-cuda-host", kWho);
  const std::string cu = dir->path() + "/kernels.cpp", so = dir->path() + "/kernels.so";
  write_text_file(cu, source.text, kWho);
  const std::string command = fmt::format("{} {} -include {} -o {} {} 2>&1", cxx, host_flags(),
                                          shell_quote(header), shell_quote(so), shell_quote(cu));
  CommandResult built = run_command(command, kWho);
  if (built.exit_code != 0)
    user_error(msg::kHostBuild, command,
               built.exit_code == 127 ? std::string(msg::kHostNoCompiler)
                                      : fmt::format("exit status {}", built.exit_code),
               built.output);
  auto impl = std::make_unique<Impl>();
  impl->dir = std::move(dir);
  impl->path = so;
  impl->library.reset(dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!impl->library) user_error(msg::kHostLoad, so, dlerror());
  for (const std::string &k : source.kernels) {
    void *entry = dlsym(impl->library.get(), ("grove_host_" + k).c_str());
    GROVE_CHECK(entry != nullptr, "the host build has no launcher for {}", k);
    impl->entries[k] = reinterpret_cast<HostLaunch>(entry);
  }
  std::shared_ptr<const HostKernels> result(new HostKernels(std::move(impl)));
  cache[source.text] = result;
  return result;
}

const std::string &HostKernels::library_path() const { return impl_->path; }

void HostKernels::launch(const std::string &name, void **args, unsigned blocks, unsigned threads,
                         size_t shared_bytes) const {
  auto it = impl_->entries.find(name);
  GROVE_CHECK(it != impl_->entries.end(), "no kernel {}", name);
  it->second(args, blocks, threads, shared_bytes);
}

EmulatedModel::EmulatedModel(const plan::LevelPlan &plan, const CudaOptions &options)
    : abi_(plan.abi), source_(emit_cuda(plan, options)), kernels_(HostKernels::build(source_)) {
  abi_.function = source_.kernels.front();
  abi_.target = "cuda-emulated";
}

void EmulatedModel::bind(const Weights &weights) {
  params_.clear();
  packed_.clear();
  for (const ModelAbi::Param &p : abi_.params) {
    auto it = weights.find(p.name);
    if (it == weights.end() || it->second.shape != p.shape)
      user_error(msg::kWeightMissing, abi_.model, p.name, shape_string(p.shape));
    params_.push_back(it->second.data);
  }
  for (const PackedWeight &w : abi_.packed) {
    size_t p = 0;
    while (abi_.params[p].name != w.param) p++;
    packed_.emplace_back(w.size());
    pack(w, params_[p].data(), packed_.back().data());
  }
}

// Steps: allocate the states (plus the DAG inspector's zero row, zero) and the temps' scratch; the
// arguments (KernelArgs.h); the launches in order; copy out the roots' rows.
std::vector<float> EmulatedModel::execute(const LinearizedBatch &batch) const {
  if (params_.empty() && !abi_.params.empty()) user_error(msg::kNoWeights, abi_.model);
  const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  std::vector<std::vector<float>> states;
  for (const ModelAbi::State &s : abi_.states) states.emplace_back(rows * s.row_elements, 0.0f);
  std::vector<float> scratch(std::max<int64_t>(1, batch.num_nodes * source_.scratch_floats_per_node));
  unsigned counter = 0;
  static const std::vector<int32_t> kNoTeam{0};

  CallBuffers buffers;
  for (const std::vector<float> &p : params_) buffers.params.push_back(p.data());
  for (const std::vector<float> &p : packed_) buffers.packed.push_back(p.data());
  for (std::vector<float> &s : states) buffers.states.push_back(s.data());
  buffers.level_begin = batch.level_begin.data();
  buffers.child_begin = batch.child_begin.data();
  buffers.children = batch.children.data();
  buffers.token = batch.token.data();
  buffers.team_begin = batch.team_begin.empty() ? kNoTeam.data() : batch.team_begin.data();
  buffers.scratch = scratch.data();
  buffers.barrier = &counter;
  KernelArgs args(abi_, buffers, batch.num_levels);
  const CudaOptions &o = source_.options;
  for_each_launch(source_, batch.num_levels, [&](const std::string &kernel, int32_t level) {
    args.set_level(level);
    kernels_->launch(kernel, args.argv(), unsigned(o.blocks), unsigned(o.threads),
                     size_t(source_.shared_bytes));
  });

  const int64_t width = abi_.output_elements();
  const std::vector<float> &out = states[abi_.output];
  std::vector<float> result;
  result.reserve(batch.roots.size() * width);
  for (int32_t root : batch.roots)
    result.insert(result.end(), out.begin() + int64_t(root) * width, out.begin() + int64_t(root + 1) * width);
  return result;
}

Tensor EmulatedModel::run(std::span<const Tree> trees) const {
  if (abi_.runs_dags())
    user_error(msg::kWrongInputs, abi_.model, abi_.structure, "DAGs or sequences", "trees");
  InspectorOptions options;
  options.arity = {abi_.min_children, abi_.max_children};
  options.vocab_size = abi_.vocab_size;
  std::vector<int64_t> shape{int64_t(trees.size())};
  shape.insert(shape.end(), abi_.output_shape.begin(), abi_.output_shape.end());
  Tensor result(shape);
  if (trees.empty()) return result;
  result.data = execute(linearize(trees, options));
  return result;
}

Tensor EmulatedModel::run_dags(std::span<const Dag> dags, DagOutputs outputs) const {
  if (!abi_.runs_dags()) user_error(msg::kWrongInputs, abi_.model, abi_.structure, "trees", "DAGs");
  DagInspectorOptions options;
  options.slots = abi_.predecessor_slots;
  options.vocab_size = abi_.vocab_size;
  options.outputs = outputs;
  const int64_t width = abi_.output_elements();
  std::vector<float> rows = dags.empty() ? std::vector<float>{} : execute(linearize_dags(dags, options));
  std::vector<int64_t> shape{int64_t(rows.size()) / width};
  shape.insert(shape.end(), abi_.output_shape.begin(), abi_.output_shape.end());
  Tensor result(shape);
  result.data = std::move(rows);
  return result;
}

Tensor EmulatedModel::run_sequences(std::span<const std::vector<int32_t>> sequences) const {
  std::vector<Dag> chains;
  for (const std::vector<int32_t> &tokens : sequences) chains.push_back(chain_dag(tokens));
  return run_dags(chains, DagOutputs::Sinks);
}

}  // namespace grove::cuda
