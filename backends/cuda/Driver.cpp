#include "backends/cuda/Driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <bit>
#include <chrono>
#include <cstdlib>
#include <list>
#include <map>
#include <mutex>
#include <tuple>

#include "backends/cuda/KernelArgs.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "backends/runtime/Clock.h"
#include "backends/runtime/Messages.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_messages;
namespace rt_msg = runtime_messages;

namespace {

// The driver's C interface as far as grove uses it, declared here (no cuda.h needed to build):
// CUresult is an int (0 = CUDA_SUCCESS), handles are opaque pointers, CUdeviceptr is 64 bits. The
// names are the real exported ones that cuda.h's macros map to in CUDA 12 and 13 (_v2 suffixes).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;
constexpr int kAttrMultiprocessors = 16, kAttrMajor = 75, kAttrMinor = 76, kAttrCooperative = 95,
              kAttrSharedOptin = 97;
constexpr int kFuncMaxDynamicShared = 8;
constexpr size_t kDefaultSharedLimit = 48 * 1024;
constexpr int kCaptureModeThreadLocal = 1;  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

struct Api {
  void *handle = nullptr;
  std::string library;  // what was opened: $GROVE_CUDA_DRIVER or libcuda.so.1
  std::string error;    // why it cannot be used
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*get_error_name)(CUresult, const char **) = nullptr;
  CUresult (*get_error_string)(CUresult, const char **) = nullptr;
  CUresult (*device_get_count)(int *) = nullptr;
  CUresult (*device_get)(CUdevice *, int) = nullptr;
  CUresult (*device_get_name)(char *, int, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int *, int, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(Handle *, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(Handle) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*module_load_data)(Handle *, const void *) = nullptr;
  CUresult (*module_unload)(Handle) = nullptr;
  CUresult (*module_get_function)(Handle *, Handle, const char *) = nullptr;
  CUresult (*func_set_attribute)(Handle, int, int) = nullptr;
  CUresult (*occupancy)(int *, Handle, int, size_t) = nullptr;
  CUresult (*launch)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, Handle,
                     void **, void **) = nullptr;
  CUresult (*launch_cooperative)(Handle, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                 Handle, void **) = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t) = nullptr;
  CUresult (*memset_d32)(CUdeviceptr, unsigned, size_t) = nullptr;
  CUresult (*stream_create)(Handle *, unsigned) = nullptr;
  CUresult (*stream_destroy)(Handle) = nullptr;
  CUresult (*stream_synchronize)(Handle) = nullptr;
  CUresult (*stream_begin_capture)(Handle, int) = nullptr;
  CUresult (*stream_end_capture)(Handle, Handle *) = nullptr;
  CUresult (*graph_instantiate)(Handle *, Handle, unsigned long long) = nullptr;
  CUresult (*graph_launch)(Handle, Handle) = nullptr;
  CUresult (*graph_exec_destroy)(Handle) = nullptr;
  CUresult (*graph_destroy)(Handle) = nullptr;
};

const Api &api() {
  static const Api loaded = [] {
    Api a;
    const char *named = std::getenv("GROVE_CUDA_DRIVER");
    a.library = named && *named ? named : "libcuda.so.1";
    a.handle = dlopen(a.library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!a.handle) {
      const char *e = dlerror();
      const std::string which =
          named && *named ? fmt::format("{} (named by $GROVE_CUDA_DRIVER)", a.library) : a.library;
      a.error = fmt::format(msg::kNoDriver, which, e ? e : "unknown reason");
      return a;
    }
    auto find = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(a.handle, symbol));
      if (!fn && a.error.empty()) a.error = fmt::format(msg::kDriverMissingSymbol, a.library, symbol);
    };
    find(a.init, "cuInit");
    find(a.get_error_name, "cuGetErrorName");
    find(a.get_error_string, "cuGetErrorString");
    find(a.device_get_count, "cuDeviceGetCount");
    find(a.device_get, "cuDeviceGet");
    find(a.device_get_name, "cuDeviceGetName");
    find(a.device_get_attribute, "cuDeviceGetAttribute");
    find(a.primary_ctx_retain, "cuDevicePrimaryCtxRetain");
    find(a.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2");
    find(a.ctx_set_current, "cuCtxSetCurrent");
    find(a.ctx_synchronize, "cuCtxSynchronize");
    find(a.module_load_data, "cuModuleLoadData");
    find(a.module_unload, "cuModuleUnload");
    find(a.module_get_function, "cuModuleGetFunction");
    find(a.func_set_attribute, "cuFuncSetAttribute");
    find(a.occupancy, "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    find(a.launch, "cuLaunchKernel");
    find(a.launch_cooperative, "cuLaunchCooperativeKernel");
    find(a.mem_alloc, "cuMemAlloc_v2");
    find(a.mem_free, "cuMemFree_v2");
    find(a.memcpy_htod, "cuMemcpyHtoD_v2");
    find(a.memcpy_dtoh, "cuMemcpyDtoH_v2");
    find(a.memset_d32, "cuMemsetD32_v2");
    find(a.stream_create, "cuStreamCreate");
    find(a.stream_destroy, "cuStreamDestroy_v2");
    find(a.stream_synchronize, "cuStreamSynchronize");
    find(a.stream_begin_capture, "cuStreamBeginCapture_v2");
    find(a.stream_end_capture, "cuStreamEndCapture");
    find(a.graph_instantiate, "cuGraphInstantiateWithFlags");
    find(a.graph_launch, "cuGraphLaunch");
    find(a.graph_exec_destroy, "cuGraphExecDestroy");
    find(a.graph_destroy, "cuGraphDestroy");
    if (!a.error.empty()) return a;
    if (CUresult rc = a.init(0); rc != 0) {
      const char *name = "?", *text = "?";
      a.get_error_name(rc, &name);
      a.get_error_string(rc, &text);
      a.error = fmt::format(msg::kDriverCall, "cuInit", name ? name : "?", text ? text : "?");
    }
    return a;
  }();
  return loaded;
}

const Api &loaded_api() {
  const Api &a = api();
  if (!a.error.empty()) throw UserError(a.error);
  return a;
}

// Every driver call goes through this: a failure is a UserError naming the call.
void check(CUresult rc, const char *call) {
  if (rc == 0) return;
  const Api &a = api();
  const char *name = "?", *text = "?";
  a.get_error_name(rc, &name);
  a.get_error_string(rc, &text);
  user_error(msg::kDriverCall, call, name, text);
}

// A device allocation, freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) : bytes_(std::max<size_t>(bytes, 4)) {
    check(loaded_api().mem_alloc(&ptr_, bytes_), "cuMemAlloc");
  }
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer() {
    if (ptr_) api().mem_free(ptr_);
  }
  void upload(const void *data, size_t bytes) {
    if (bytes > 0) check(api().memcpy_htod(ptr_, data, bytes), "cuMemcpyHtoD");
  }
  void zero() { check(api().memset_d32(ptr_, 0, bytes_ / 4), "cuMemsetD32"); }
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  CUdeviceptr address() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace

bool driver_available(std::string *why) {
  const Api &a = api();
  if (why) *why = a.error;
  return a.error.empty();
}

DeviceInfo device_info(int ordinal) {
  const Api &a = loaded_api();
  int count = 0;
  check(a.device_get_count(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) user_error(msg::kNoDevice, count);
  CUdevice dev = 0;
  check(a.device_get(&dev, ordinal), "cuDeviceGet");
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  check(a.device_get_name(name, sizeof(name), dev), "cuDeviceGetName");
  info.name = name;
  int v = 0;
  check(a.device_get_attribute(&info.major, kAttrMajor, dev), "cuDeviceGetAttribute");
  check(a.device_get_attribute(&info.minor, kAttrMinor, dev), "cuDeviceGetAttribute");
  check(a.device_get_attribute(&info.multiprocessors, kAttrMultiprocessors, dev), "cuDeviceGetAttribute");
  check(a.device_get_attribute(&v, kAttrCooperative, dev), "cuDeviceGetAttribute");
  info.cooperative_launch = v != 0;
  check(a.device_get_attribute(&v, kAttrSharedOptin, dev), "cuDeviceGetAttribute");
  info.max_shared_optin = v;
  return info;
}

namespace {

// The smallest power of two >= n (1 for 0): call shapes round their buffers up to one.
int64_t capacity(int64_t n) { return int64_t(std::bit_ceil(uint64_t(std::max<int64_t>(n, 1)))); }

// A call shape: the level count (graphs only: it decides the launches) and each buffer's capacity.
using CallShape = std::tuple<int32_t, std::vector<int64_t>>;

// The device side of one call shape: its buffers and, per level with graphs, the graph of its
// launches (captured over these buffers, so that a replay reads what the call uploaded into them).
struct CallState {
  DeviceBuffer inspector, scratch, barrier;
  std::vector<DeviceBuffer> states;
  std::vector<size_t> offsets;  // each inspector array's first element in `inspector`
  Handle graph = nullptr, exec = nullptr;
  CallState() = default;
  CallState(const CallState &) = delete;
  CallState &operator=(const CallState &) = delete;
  ~CallState() {
    if (exec) api().graph_exec_destroy(exec);
    if (graph) api().graph_destroy(graph);
  }
};

}  // namespace

struct DeviceModel::Impl {
  ModelAbi abi;
  CudaSource source;
  DeviceInfo device;
  CUdevice device_handle = 0;
  Handle context = nullptr, module = nullptr, stream = nullptr;
  std::map<std::string, Handle> functions;
  std::vector<DeviceBuffer> params, packed;
  double compile_ms = 0;
  // The kept call shapes, most recently used first.
  std::list<std::pair<CallShape, std::unique_ptr<CallState>>> calls;
  mutable std::mutex lock;  // one call at a time: the scratch and the barrier are the model's

  CallState &call_state(const LinearizedBatch &batch, bool graphs);
  void launch_all(const LinearizedBatch &batch, CallState &state, Handle on_stream);
};

// Steps: the device and its primary context; the source compiled by NVRTC for the device's
// architecture and loaded; each kernel's shared memory raised past 48 KB where it needs it (within
// the opt-in limit); for the persistent form, a cooperative device and a grid that fits the
// co-resident blocks the occupancy API reports (a device without cooperative launches is refused
// before the compile); per level with graphs, the stream to capture on.
DeviceModel::DeviceModel(const plan::LevelPlan &plan, const CudaOptions &options, int device)
    : impl_(std::make_unique<Impl>()) {
  const Api &a = loaded_api();
  Impl &m = *impl_;
  m.device = device_info(device);
  CUdevice dev = 0;
  check(a.device_get(&dev, device), "cuDeviceGet");
  check(a.primary_ctx_retain(&m.context, dev), "cuDevicePrimaryCtxRetain");
  m.device_handle = dev;
  check(a.ctx_set_current(m.context), "cuCtxSetCurrent");
  if (options.form == Form::Persistent && !m.device.cooperative_launch)
    user_error(msg::kNoCooperative, device);
  auto t0 = std::chrono::steady_clock::now();
  m.abi = plan.abi;
  m.source = emit_cuda(plan, options);
  m.abi.function = m.source.kernels.front();
  m.abi.target = "cuda-" + m.device.arch();
  const NvrtcOutput &cubin = compile_with_nvrtc(m.source, m.device.arch(), m.abi.model);
  check(a.module_load_data(&m.module, cubin.image.data()), "cuModuleLoadData");
  const int64_t shared = m.source.shared_bytes;
  for (const std::string &k : m.source.kernels) {
    Handle f = nullptr;
    check(a.module_get_function(&f, m.module, k.c_str()), "cuModuleGetFunction");
    if (size_t(shared) > kDefaultSharedLimit) {
      if (shared > m.device.max_shared_optin)
        user_error(msg::kSharedTooLarge, k, shared, device, m.device.max_shared_optin);
      check(a.func_set_attribute(f, kFuncMaxDynamicShared, int(shared)), "cuFuncSetAttribute");
    }
    m.functions[k] = f;
  }
  m.compile_ms = ms_since(t0);
  if (options.form == Form::Persistent) {
    int per_sm = 0;
    check(a.occupancy(&per_sm, m.functions.at("grove_persistent"), options.threads, size_t(shared)),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    const int64_t resident = int64_t(per_sm) * m.device.multiprocessors;
    if (options.blocks > resident)
      user_error(msg::kGridTooLarge, "grove_persistent", options.blocks, device, resident, per_sm,
                 m.device.multiprocessors, options.threads, shared);
  } else if (options.graph) {
    check(a.stream_create(&m.stream, 0), "cuStreamCreate");
  }
}

DeviceModel::~DeviceModel() {
  if (!impl_ || !impl_->context) return;
  api().ctx_set_current(impl_->context);
  impl_->calls.clear();
  if (impl_->stream) api().stream_destroy(impl_->stream);
  impl_->params.clear();
  impl_->packed.clear();
  if (impl_->module) api().module_unload(impl_->module);
  api().primary_ctx_release(impl_->device_handle);
}

const CudaSource &DeviceModel::source() const { return impl_->source; }
const DeviceInfo &DeviceModel::device() const { return impl_->device; }
const ModelAbi &DeviceModel::abi() const { return impl_->abi; }
double DeviceModel::compile_ms() const { return impl_->compile_ms; }

// The weights go to the device once: the params as they are, and their GEMM panels packed.
void DeviceModel::bind(const Weights &weights) {
  Impl &m = *impl_;
  std::lock_guard guard(m.lock);
  check(loaded_api().ctx_set_current(m.context), "cuCtxSetCurrent");  // the caller's thread may be new
  std::vector<DeviceBuffer> params, packed;
  std::vector<const float *> host;
  for (const ModelAbi::Param &p : m.abi.params) {
    auto it = weights.find(p.name);
    if (it == weights.end() || it->second.shape != p.shape)
      user_error(msg::kWeightMissing, m.abi.model, p.name, shape_string(p.shape));
    host.push_back(it->second.data.data());
    params.emplace_back(it->second.data.size() * 4);
    params.back().upload(it->second.data.data(), it->second.data.size() * 4);
  }
  for (const PackedWeight &w : m.abi.packed) {
    size_t p = 0;
    while (m.abi.params[p].name != w.param) p++;
    std::vector<float> panels(w.size());
    pack(w, host[p], panels.data());
    packed.emplace_back(panels.size() * 4);
    packed.back().upload(panels.data(), panels.size() * 4);
  }
  // A graph captured the old weights' addresses: the kept calls go with them.
  m.calls.clear();
  m.params = std::move(params);
  m.packed = std::move(packed);
}

namespace {

// The inspector's arrays of a batch, in the order CallState::offsets keeps them.
std::vector<const std::vector<int32_t> *> inspector_arrays(const LinearizedBatch &batch) {
  return {&batch.level_begin, &batch.child_begin, &batch.children, &batch.token, &batch.team_begin};
}

}  // namespace

// The kept state of the batch's shape, or a new one (allocated here; the least recently used
// beyond kCallShapesKept freed first).
CallState &DeviceModel::Impl::call_state(const LinearizedBatch &batch, bool graphs) {
  std::vector<int64_t> caps;
  for (const std::vector<int32_t> *v : inspector_arrays(batch)) caps.push_back(capacity(int64_t(v->size())));
  const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  caps.push_back(capacity(rows));
  caps.push_back(capacity(batch.num_nodes * source.scratch_floats_per_node));
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
void DeviceModel::Impl::launch_all(const LinearizedBatch &batch, CallState &state, Handle on_stream) {
  const Api &a = api();
  CallBuffers buffers;
  for (const DeviceBuffer &p : params) buffers.params.push_back(p.get());
  for (const DeviceBuffer &p : packed) buffers.packed.push_back(p.get());
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
  const CudaOptions &o = source.options;
  const unsigned shared = unsigned(source.shared_bytes);
  for_each_launch(source, batch.num_levels, [&](const std::string &kernel, int32_t level) {
    args.set_level(level);
    Handle f = functions.at(kernel);
    if (o.form == Form::Persistent)
      check(a.launch_cooperative(f, unsigned(o.blocks), 1, 1, unsigned(o.threads), 1, 1, shared, on_stream,
                                 args.argv()),
            "cuLaunchCooperativeKernel");
    else
      check(a.launch(f, unsigned(o.blocks), 1, 1, unsigned(o.threads), 1, 1, 0, on_stream, args.argv(),
                     nullptr),
            "cuLaunchKernel");
  });
}

// Steps: the call shape's buffers (kept, or allocated); the inspector's arrays in one copy; the
// states (zeroed: the DAG zero row) and the barrier's counter zeroed; the launches — replaying the
// shape's graph per level with graphs (captured on the first call of the shape), else launched one
// by one; synchronize; the output state back, the roots' rows kept.
std::vector<float> DeviceModel::execute(const LinearizedBatch &batch) const {
  Impl &m = *impl_;
  std::lock_guard guard(m.lock);
  if (m.params.empty() && !m.abi.params.empty()) user_error(msg::kNoWeights, m.abi.model);
  const Api &a = loaded_api();
  check(a.ctx_set_current(m.context), "cuCtxSetCurrent");
  const bool graphs = m.stream != nullptr;
  CallState &state = m.call_state(batch, graphs);
  std::vector<int32_t> ints(state.inspector.bytes() / 4, 0);
  const std::vector<const std::vector<int32_t> *> arrays = inspector_arrays(batch);
  for (size_t i = 0; i < arrays.size(); ++i)
    std::copy(arrays[i]->begin(), arrays[i]->end(), ints.begin() + int64_t(state.offsets[i]));
  state.inspector.upload(ints.data(), ints.size() * 4);
  for (DeviceBuffer &s : state.states) s.zero();
  state.barrier.zero();

  if (!graphs) {
    m.launch_all(batch, state, nullptr);
    check(a.ctx_synchronize(), "cuCtxSynchronize");
  } else {
    if (!state.exec) {
      check(a.stream_begin_capture(m.stream, kCaptureModeThreadLocal), "cuStreamBeginCapture");
      try {
        m.launch_all(batch, state, m.stream);
      } catch (...) {
        Handle broken = nullptr;
        a.stream_end_capture(m.stream, &broken);
        if (broken) a.graph_destroy(broken);
        throw;
      }
      check(a.stream_end_capture(m.stream, &state.graph), "cuStreamEndCapture");
      check(a.graph_instantiate(&state.exec, state.graph, 0), "cuGraphInstantiateWithFlags");
    }
    check(a.graph_launch(state.exec, m.stream), "cuGraphLaunch");
    check(a.stream_synchronize(m.stream), "cuStreamSynchronize");
  }

  const int64_t width = m.abi.output_elements();
  const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  std::vector<float> out(size_t(rows * width));
  check(a.memcpy_dtoh(out.data(), state.states[m.abi.output].address(), out.size() * 4), "cuMemcpyDtoH");
  std::vector<float> result;
  result.reserve(batch.roots.size() * size_t(width));
  for (int32_t root : batch.roots)
    result.insert(result.end(), out.begin() + int64_t(root) * width, out.begin() + int64_t(root + 1) * width);
  return result;
}

Tensor DeviceModel::run(std::span<const Tree> trees) const { return run(trees, RunOptions{}); }

Tensor DeviceModel::run_dags(std::span<const Dag> dags, DagOutputs outputs) const {
  RunOptions options;
  options.outputs = outputs;
  return run_dags(dags, options);
}

Tensor DeviceModel::run(std::span<const Tree> trees, const RunOptions &options, RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (options.batch < 0) user_error(rt_msg::kNegativeBatch, options.batch);
  if (abi.runs_dags()) user_error(rt_msg::kTreesForDagModel, abi.model, abi.structure);
  InspectorOptions inspector;
  inspector.arity = {abi.min_children, abi.max_children};
  inspector.vocab_size = abi.vocab_size;
  std::vector<int64_t> shape{int64_t(trees.size())};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  const int64_t width = abi.output_elements();
  const int64_t batch = options.batch == 0 ? int64_t(trees.size()) : options.batch;
  if (stats) stats->trees += int64_t(trees.size());
  for (int64_t begin = 0; begin < int64_t(trees.size()); begin += batch) {
    const int64_t end = std::min<int64_t>(begin + batch, int64_t(trees.size()));
    auto t0 = std::chrono::steady_clock::now();
    inspector.first_tree_number = options.first_number + begin;
    LinearizedBatch linear = linearize(trees.subspan(size_t(begin), size_t(end - begin)), inspector);
    const double inspector_ms = ms_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<float> rows = execute(linear);
    std::copy(rows.begin(), rows.end(), result.data.begin() + begin * width);
    if (stats) {
      stats->nodes += linear.num_nodes;
      stats->levels += linear.num_levels;
      stats->calls += 1;
      stats->inspector_ms += inspector_ms;
      stats->compute_ms += ms_since(t1);
    }
  }
  return result;
}

Tensor DeviceModel::run_dags(std::span<const Dag> dags, const RunOptions &options, RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (options.batch < 0) user_error(rt_msg::kNegativeBatch, options.batch);
  if (!abi.runs_dags()) user_error(rt_msg::kDagsForTreeModel, abi.model, abi.structure, options.noun);
  DagInspectorOptions inspector;
  inspector.slots = abi.predecessor_slots;
  inspector.vocab_size = abi.vocab_size;
  inspector.noun = options.noun;
  inspector.outputs = options.outputs;
  std::vector<float> rows;
  const int64_t batch = options.batch == 0 ? int64_t(dags.size()) : options.batch;
  if (stats) stats->trees += int64_t(dags.size());
  for (int64_t begin = 0; begin < int64_t(dags.size()); begin += batch) {
    const int64_t end = std::min<int64_t>(begin + batch, int64_t(dags.size()));
    auto t0 = std::chrono::steady_clock::now();
    inspector.first_dag_number = options.first_number + begin;
    LinearizedBatch linear = linearize_dags(dags.subspan(size_t(begin), size_t(end - begin)), inspector);
    const double inspector_ms = ms_since(t0);
    auto t1 = std::chrono::steady_clock::now();
    std::vector<float> out = execute(linear);
    rows.insert(rows.end(), out.begin(), out.end());
    if (stats) {
      stats->nodes += linear.num_nodes;
      stats->levels += linear.num_levels;
      stats->calls += 1;
      stats->inspector_ms += inspector_ms;
      stats->compute_ms += ms_since(t1);
    }
  }
  std::vector<int64_t> shape{int64_t(rows.size()) / abi.output_elements()};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  result.data = std::move(rows);
  return result;
}

Tensor DeviceModel::run_sequences(std::span<const std::vector<int32_t>> sequences, const RunOptions &options,
                                  RunStats *stats) const {
  const ModelAbi &abi = impl_->abi;
  if (!abi.runs_dags()) user_error(rt_msg::kDagsForTreeModel, abi.model, abi.structure, "sequence");
  std::vector<Dag> chains;
  chains.reserve(sequences.size());
  for (const std::vector<int32_t> &tokens : sequences) chains.push_back(chain_dag(tokens));
  RunOptions chain_options = options;
  chain_options.noun = "sequence";
  chain_options.outputs = DagOutputs::Sinks;  // a chain's one sink is its last token
  return run_dags(chains, chain_options, stats);
}

}  // namespace grove::cuda
