#include "backends/runtime/CudaRunner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <bit>
#include <chrono>
#include <list>
#include <mutex>
#include <tuple>

#include "backends/runtime/Clock.h"
#include "backends/runtime/CudaKernelArgs.h"
#include "backends/runtime/CudaMessages.h"
#include "backends/runtime/DagInspector.h"
#include "backends/runtime/Messages.h"
#include "backends/runtime/RunnerShared.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_driver_messages;
namespace rt_msg = runtime_messages;

namespace {

// "sm_90" → (true, 9, 0, ""), "compute_86" → (false, 8, 6, ""), "sm_90a" → suffix "a"; false if
// neither.
struct Arch {
  bool cubin = true;
  int major = 0, minor = 0;
  std::string suffix;
};
bool parse_arch(const std::string &s, Arch &a) {
  std::string digits;
  if (s.rfind("sm_", 0) == 0) {
    a.cubin = true;
    digits = s.substr(3);
  } else if (s.rfind("compute_", 0) == 0) {
    a.cubin = false;
    digits = s.substr(8);
  } else {
    return false;
  }
  size_t n = 0;
  while (n < digits.size() && std::isdigit(static_cast<unsigned char>(digits[n]))) n++;
  if (n < 2 || n > 3) return false;
  const int number = std::stoi(digits.substr(0, n));
  a.major = number / 10;
  a.minor = number % 10;
  a.suffix = digits.substr(n);
  return true;
}

// The smallest power of two >= n (1 for 0): call shapes round their buffers up to one.
int64_t capacity(int64_t n) { return int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1)))); }

// A call shape: the level count (graphs only: it decides the launches) and each buffer's capacity.
using CallShape = std::tuple<int32_t, std::vector<int64_t>>;

// One bound set of weights on the device, immutable once published.
struct DeviceWeights {
  Handle context = nullptr;
  uint64_t generation = 0;
  std::vector<DeviceBuffer> params, packed;
  DeviceWeights() = default;
  DeviceWeights(const DeviceWeights &) = delete;
  DeviceWeights &operator=(const DeviceWeights &) = delete;
  ~DeviceWeights() {
    if (context) cuda_api().ctx_set_current(context);  // the last holder's thread may be any
  }
};

// The device side of one call shape: its buffers and, per level with graphs, the graph of its
// launches (captured over these buffers and the weights of `generation`, so that a replay reads what
// the call uploaded into them).
struct CallState {
  DeviceBuffer inspector, scratch, barrier;
  std::vector<DeviceBuffer> states;
  std::vector<size_t> offsets;  // each inspector array's first element in `inspector`
  Handle graph = nullptr, exec = nullptr;
  uint64_t generation = 0;
  CallState() = default;
  CallState(const CallState &) = delete;
  CallState &operator=(const CallState &) = delete;
  ~CallState() { drop_graph(); }
  void drop_graph() {
    if (exec) cuda_api().graph_exec_destroy(exec);
    if (graph) cuda_api().graph_destroy(graph);
    exec = graph = nullptr;
  }
};

// The inspector's arrays of a batch, in the order CallState::offsets keeps them.
std::vector<const std::vector<int32_t> *> inspector_arrays(const LinearizedBatch &batch) {
  return {&batch.level_begin, &batch.child_begin, &batch.children, &batch.token, &batch.team_begin};
}

}  // namespace

int choose_cuda_image(const std::vector<std::string> &arches, int major, int minor) {
  int best = -1, best_minor = -1;
  for (size_t i = 0; i < arches.size(); ++i) {
    Arch a;
    if (!parse_arch(arches[i], a) || !a.cubin || a.major != major || a.minor > minor) continue;
    if (!a.suffix.empty() && a.minor != minor) continue;  // sm_90a: that architecture only
    if (a.minor > best_minor) best = int(i), best_minor = a.minor;
  }
  if (best >= 0) return best;
  int best_number = -1;
  for (size_t i = 0; i < arches.size(); ++i) {
    Arch a;
    if (!parse_arch(arches[i], a) || a.cubin || !a.suffix.empty()) continue;
    const int number = a.major * 10 + a.minor;
    if (number <= major * 10 + minor && number > best_number) best = int(i), best_number = number;
  }
  return best;
}

struct CudaRunner::Impl {
  ModelAbi abi;
  CudaLaunch launch;
  DeviceInfo device;
  std::string loaded_arch;
  CUdevice device_handle = 0;
  Handle context = nullptr, module = nullptr, stream = nullptr;
  std::map<std::string, Handle> functions;

  // The current weights (null before the first bind); `weights_lock` guards only the pointer.
  mutable std::mutex weights_lock;
  std::shared_ptr<const DeviceWeights> current;
  uint64_t generations = 0;

  // The kept call shapes, most recently used first; one call at a time (`call_lock`).
  mutable std::mutex call_lock;
  std::list<std::pair<CallShape, std::unique_ptr<CallState>>> calls;

  // What the constructor acquired, released here rather than in ~CudaRunner, so that an open that
  // fails part way (a grid too large for the device, a kernel missing from the image) releases what
  // it had already taken: the calls' buffers and the weights before the module, the context last.
  Impl() = default;
  Impl(const Impl &) = delete;
  Impl &operator=(const Impl &) = delete;
  ~Impl() {
    if (!context) return;
    const CudaApi &a = cuda_api();
    a.ctx_set_current(context);
    calls.clear();
    if (stream) a.stream_destroy(stream);
    current.reset();
    if (module) a.module_unload(module);
    a.primary_ctx_release(device_handle);
  }

  std::shared_ptr<const DeviceWeights> snapshot() const {
    std::lock_guard guard(weights_lock);
    return current;
  }
  std::shared_ptr<const DeviceWeights> bound_snapshot() const {
    std::shared_ptr<const DeviceWeights> w = snapshot();
    if (!w && !abi.params.empty()) user_error(rt_msg::kNoWeights, abi.model);
    return w;
  }
  void upload(const std::vector<const float *> &data);
  CallState &call_state(const LinearizedBatch &batch, bool graphs);
  void launch_all(const DeviceWeights *w, const LinearizedBatch &batch, CallState &state, Handle on_stream);
  std::vector<float> execute(const DeviceWeights *w, const LinearizedBatch &batch);
};

// Steps: the device and its primary context; a cooperative device for the persistent form; the
// image for the device's architecture, checked and loaded; each kernel's shared memory raised past
// 48 KB where it needs it (within the opt-in limit); for the persistent form, a grid that fits the
// co-resident blocks the occupancy API reports; per level with graphs, the stream to capture on.
CudaRunner::CudaRunner(ModelAbi abi, const std::vector<CudaImage> &images, const std::string &where,
                       int device)
    : impl_(std::make_unique<Impl>()) {
  Impl &m = *impl_;
  if (!abi.cuda) user_error(msg::kNotCudaLibrary, where);
  m.abi = std::move(abi);
  m.launch = *m.abi.cuda;
  const CudaApi &a = loaded_cuda_api();
  m.device = device_info(device);
  CUdevice dev = 0;
  cuda_check(a.device_get(&dev, device), "cuDeviceGet");
  cuda_check(a.primary_ctx_retain(&m.context, dev), "cuDevicePrimaryCtxRetain");
  m.device_handle = dev;
  cuda_check(a.ctx_set_current(m.context), "cuCtxSetCurrent");
  if (m.launch.persistent && !m.device.cooperative_launch) user_error(msg::kNoCooperative, device);

  if (images.empty()) user_error(msg::kNoImages, where);
  std::vector<std::string> arches;
  for (const CudaImage &i : images) arches.push_back(i.arch);
  const int chosen = choose_cuda_image(arches, m.device.major, m.device.minor);
  if (chosen < 0) {
    user_error(msg::kNoImageForDevice, where, device, m.device.name, m.device.arch(), fmt::join(arches, ", "),
               m.device.arch());
  }
  const CudaImage &image = images[size_t(chosen)];
  m.loaded_arch = image.arch;
  if (image.arch.rfind("compute_", 0) == 0) {
    const std::string ptx(static_cast<const char *>(image.data), image.size);  // NUL-terminated
    cuda_check(a.module_load_data(&m.module, ptx.c_str()), "cuModuleLoadData");
  } else {
    cuda_check(a.module_load_data(&m.module, image.data), "cuModuleLoadData");
  }
  const int64_t shared = m.launch.shared_bytes;
  for (const std::string &k : m.launch.kernels) {
    Handle f = nullptr;
    cuda_check(a.module_get_function(&f, m.module, k.c_str()), "cuModuleGetFunction");
    if (size_t(shared) > kDefaultSharedLimit) {
      if (shared > m.device.max_shared_optin)
        user_error(msg::kSharedTooLarge, k, shared, device, m.device.max_shared_optin);
      cuda_check(a.func_set_attribute(f, kFuncMaxDynamicShared, int(shared)), "cuFuncSetAttribute");
    }
    m.functions[k] = f;
  }
  if (m.launch.persistent) {
    int per_sm = 0;
    cuda_check(a.occupancy(&per_sm, m.functions.at("grove_persistent"), m.launch.threads, size_t(shared)),
               "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    const int64_t resident = int64_t(per_sm) * m.device.multiprocessors;
    if (m.launch.blocks > resident)
      user_error(msg::kGridTooLarge, "grove_persistent", m.launch.blocks, device, resident, per_sm,
                 m.device.multiprocessors, m.launch.threads, shared);
  } else if (m.launch.graph) {
    cuda_check(a.stream_create(&m.stream, 0), "cuStreamCreate");
  }
}

CudaRunner::~CudaRunner() = default;  // Impl releases what the runner holds

const ModelAbi &CudaRunner::abi() const { return impl_->abi; }
const DeviceInfo &CudaRunner::device() const { return impl_->device; }
const std::string &CudaRunner::loaded_arch() const { return impl_->loaded_arch; }
bool CudaRunner::bound() const { return impl_->snapshot() != nullptr || impl_->abi.params.empty(); }

// The weights go to the device once: the params as they are, and their GEMM panels packed. Built
// outside any lock, then swapped in.
void CudaRunner::Impl::upload(const std::vector<const float *> &data) {
  cuda_check(loaded_cuda_api().ctx_set_current(context),
             "cuCtxSetCurrent");  // the caller's thread may be new
  auto next = std::make_shared<DeviceWeights>();
  next->context = context;
  for (size_t p = 0; p < abi.params.size(); ++p) {
    const size_t bytes = size_t(Tensor::num_elements(abi.params[p].shape)) * 4;
    next->params.emplace_back(bytes);
    next->params.back().upload(data[p], bytes);
  }
  for (const PackedWeight &w : abi.packed) {
    size_t p = 0;
    while (abi.params[p].name != w.param) p++;
    std::vector<float> panels(size_t(w.words()));
    pack(w, data[p], panels.data());
    next->packed.emplace_back(panels.size() * 4);
    next->packed.back().upload(panels.data(), panels.size() * 4);
  }
  std::lock_guard guard(weights_lock);
  next->generation = ++generations;
  current = std::move(next);
}

void CudaRunner::bind(Weights weights, const std::string &weights_file) {
  Impl &m = *impl_;
  check_weights(m.abi, weights, weights_file);
  m.upload(param_data(m.abi, weights));
}

void CudaRunner::bind(const std::map<std::string, WeightView> &weights, const std::string &weights_file) {
  Impl &m = *impl_;
  check_weights(m.abi, weights, weights_file);
  m.upload(
      param_data(m.abi, weights));  // copied to the device: the caller's buffers are free once this returns
}

// The kept state of the batch's shape, or a new one (allocated here; the least recently used
// beyond kCallShapesKept freed first).
CallState &CudaRunner::Impl::call_state(const LinearizedBatch &batch, bool graphs) {
  std::vector<int64_t> caps;
  for (const std::vector<int32_t> *v : inspector_arrays(batch)) caps.push_back(capacity(int64_t(v->size())));
  const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  caps.push_back(capacity(rows));
  caps.push_back(capacity(batch.num_nodes * launch.scratch_floats_per_node));
  CallShape shape{graphs ? batch.num_levels : 0, caps};
  for (auto it = calls.begin(); it != calls.end(); ++it)
    if (it->first == shape) {
      calls.splice(calls.begin(), calls, it);
      return *calls.front().second;
    }
  while (calls.size() >= kCallShapesKept) calls.pop_back();
  auto state = std::make_unique<CallState>();
  size_t ints = 0;
  for (size_t i = 0; i < 5; ++i) {
    state->offsets.push_back(ints);
    ints += size_t(caps[i]);
  }
  state->inspector = DeviceBuffer(ints * 4);
  for (const ModelAbi::State &s : abi.states)
    state->states.emplace_back(size_t(caps[5] * s.row_elements) * 4);
  state->scratch = DeviceBuffer(size_t(caps[6]) * 4);
  state->barrier = DeviceBuffer(4);
  calls.emplace_front(std::move(shape), std::move(state));
  return *calls.front().second;
}

// The call's launches in order on `on_stream` (nullptr: the legacy stream): the persistent kernel
// cooperatively, never otherwise.
void CudaRunner::Impl::launch_all(const DeviceWeights *w, const LinearizedBatch &batch, CallState &state,
                                  Handle on_stream) {
  const CudaApi &a = cuda_api();
  CallBuffers buffers;
  if (w) {
    for (const DeviceBuffer &p : w->params) buffers.params.push_back(p.get());
    for (const DeviceBuffer &p : w->packed) buffers.packed.push_back(p.get());
  }
  for (DeviceBuffer &s : state.states) buffers.states.push_back(s.get());
  auto at = [&](size_t i) {
    return static_cast<const void *>(static_cast<const int32_t *>(state.inspector.get()) + state.offsets[i]);
  };
  buffers.level_begin = at(0);
  buffers.child_begin = at(1);
  buffers.children = at(2);
  buffers.token = at(3);
  buffers.team_begin = at(4);
  buffers.scratch = state.scratch.get();
  buffers.barrier = state.barrier.get();
  KernelArgs args(abi, buffers, batch.num_levels);
  const unsigned shared = unsigned(launch.shared_bytes);
  for_each_launch(launch, batch.num_levels, [&](const std::string &kernel, int32_t level) {
    args.set_level(level);
    Handle f = functions.at(kernel);
    if (launch.persistent)
      cuda_check(a.launch_cooperative(f, unsigned(launch.blocks), 1, 1, unsigned(launch.threads), 1, 1,
                                      shared, on_stream, args.argv()),
                 "cuLaunchCooperativeKernel");
    else
      cuda_check(a.launch(f, unsigned(launch.blocks), 1, 1, unsigned(launch.threads), 1, 1, 0, on_stream,
                          args.argv(), nullptr),
                 "cuLaunchKernel");
  });
}

// Steps: the call shape's buffers (kept, or allocated); the inspector's arrays in one copy; the
// states (zeroed: the DAG zero row) and the barrier's counter zeroed; the launches — replaying the
// shape's graph per level with graphs (captured on the first call of the shape, and again when the
// weights changed), else launched one by one; synchronize; the output state back, the roots' rows kept.
std::vector<float> CudaRunner::Impl::execute(const DeviceWeights *w, const LinearizedBatch &batch) {
  std::lock_guard guard(call_lock);
  const CudaApi &a = loaded_cuda_api();
  cuda_check(a.ctx_set_current(context), "cuCtxSetCurrent");
  const bool graphs = stream != nullptr;
  CallState &state = call_state(batch, graphs);
  std::vector<int32_t> ints(state.inspector.bytes() / 4, 0);
  const std::vector<const std::vector<int32_t> *> arrays = inspector_arrays(batch);
  for (size_t i = 0; i < arrays.size(); ++i)
    std::copy(arrays[i]->begin(), arrays[i]->end(), ints.begin() + int64_t(state.offsets[i]));
  state.inspector.upload(ints.data(), ints.size() * 4);
  for (DeviceBuffer &s : state.states) s.zero();
  state.barrier.zero();

  if (!graphs) {
    launch_all(w, batch, state, nullptr);
    cuda_check(a.ctx_synchronize(), "cuCtxSynchronize");
  } else {
    const uint64_t generation = w ? w->generation : 0;
    if (state.exec && state.generation != generation) state.drop_graph();  // captured over other weights
    if (!state.exec) {
      cuda_check(a.stream_begin_capture(stream, kCaptureModeThreadLocal), "cuStreamBeginCapture");
      try {
        launch_all(w, batch, state, stream);
      } catch (...) {
        Handle broken = nullptr;
        a.stream_end_capture(stream, &broken);
        if (broken) a.graph_destroy(broken);
        throw;
      }
      cuda_check(a.stream_end_capture(stream, &state.graph), "cuStreamEndCapture");
      cuda_check(a.graph_instantiate(&state.exec, state.graph, 0), "cuGraphInstantiateWithFlags");
      state.generation = generation;
    }
    cuda_check(a.graph_launch(state.exec, stream), "cuGraphLaunch");
    cuda_check(a.stream_synchronize(stream), "cuStreamSynchronize");
  }

  const int64_t width = abi.output_elements();
  const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  std::vector<float> out(size_t(rows * width));
  cuda_check(a.memcpy_dtoh(out.data(), state.states[size_t(abi.output)].address(), out.size() * 4),
             "cuMemcpyDtoH");
  std::vector<float> result;
  result.reserve(batch.roots.size() * size_t(width));
  for (int32_t root : batch.roots)
    result.insert(result.end(), out.begin() + int64_t(root) * width, out.begin() + int64_t(root + 1) * width);
  return result;
}

std::vector<float> CudaRunner::execute(const LinearizedBatch &batch) const {
  std::shared_ptr<const DeviceWeights> w = impl_->bound_snapshot();
  return impl_->execute(w.get(), batch);
}

Tensor CudaRunner::run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (options.batch < 0) user_error(rt_msg::kNegativeBatch, options.batch);
  if (abi.runs_dags()) user_error(rt_msg::kTreesForDagModel, abi.model, abi.structure);
  std::shared_ptr<const DeviceWeights> w = impl_->bound_snapshot();
  InspectorOptions inspector = inspector_options(abi, options.first_number);
  std::vector<int64_t> shape{int64_t(trees.size())};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  const int64_t width = abi.output_elements();
  if (stats) stats->trees += int64_t(trees.size());
  for_each_batch(int64_t(trees.size()), options.batch, [&](int64_t begin, int64_t end) {
    auto t0 = std::chrono::steady_clock::now();
    inspector.first_tree_number = options.first_number + begin;
    LinearizedBatch linear = linearize(trees.subspan(size_t(begin), size_t(end - begin)), inspector);
    const double inspector_ms = ms_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<float> rows = impl_->execute(w.get(), linear);
    std::copy(rows.begin(), rows.end(), result.data.begin() + begin * width);
    add_call(stats, linear, inspector_ms, ms_since(t1));
  });
  return result;
}

Tensor CudaRunner::run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (options.batch < 0) user_error(rt_msg::kNegativeBatch, options.batch);
  if (!abi.runs_dags()) user_error(rt_msg::kDagsForTreeModel, abi.model, abi.structure, options.noun);
  std::shared_ptr<const DeviceWeights> w = impl_->bound_snapshot();
  DagInspectorOptions inspector = dag_inspector_options(abi, options);
  std::vector<float> rows;
  if (stats) stats->trees += int64_t(dags.size());
  for_each_batch(int64_t(dags.size()), options.batch, [&](int64_t begin, int64_t end) {
    auto t0 = std::chrono::steady_clock::now();
    inspector.first_dag_number = options.first_number + begin;
    LinearizedBatch linear = linearize_dags(dags.subspan(size_t(begin), size_t(end - begin)), inspector);
    const double inspector_ms = ms_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<float> out = impl_->execute(w.get(), linear);
    rows.insert(rows.end(), out.begin(), out.end());
    add_call(stats, linear, inspector_ms, ms_since(t1));
  });
  return output_rows(abi, std::move(rows));
}

}  // namespace grove::cuda
