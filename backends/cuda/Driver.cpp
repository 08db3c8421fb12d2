#include "backends/cuda/Driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <map>
#include <mutex>

#include "backends/cuda/KernelArgs.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_messages;

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

struct Api {
  void *handle = nullptr;
  std::string error;  // why it cannot be used
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
};

const Api &api() {
  static const Api loaded = [] {
    Api a;
    a.handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!a.handle) {
      const char *e = dlerror();
      a.error = fmt::format(msg::kNoDriver, e ? e : "unknown reason");
      return a;
    }
    auto find = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(a.handle, symbol));
      if (!fn && a.error.empty()) a.error = fmt::format(msg::kDriverMissingSymbol, symbol);
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
  void upload(const void *data, size_t bytes) { check(api().memcpy_htod(ptr_, data, bytes), "cuMemcpyHtoD"); }
  void zero() { check(api().memset_d32(ptr_, 0, bytes_ / 4), "cuMemsetD32"); }
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  CUdeviceptr address() const { return ptr_; }

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

struct DeviceModel::Impl {
  ModelAbi abi;
  CudaSource source;
  DeviceInfo device;
  CUdevice device_handle = 0;
  Handle context = nullptr, module = nullptr;
  std::map<std::string, Handle> functions;
  std::vector<DeviceBuffer> params, packed;
  mutable std::mutex lock;  // one call at a time: the scratch and the barrier are the model's
};

// Steps: the device and its primary context; the source compiled by NVRTC for the device's
// architecture and loaded; each kernel's shared memory raised past 48 KB where it needs it (within
// the opt-in limit); for the persistent form, a cooperative device and a grid that fits the
// co-resident blocks the occupancy API reports.
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
  if (options.form == Form::Persistent) {
    if (!m.device.cooperative_launch) user_error(msg::kNoCooperative, device);
    int per_sm = 0;
    check(a.occupancy(&per_sm, m.functions.at("grove_persistent"), options.threads, size_t(shared)),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor");
    const int64_t resident = int64_t(per_sm) * m.device.multiprocessors;
    if (options.blocks > resident)
      user_error(msg::kGridTooLarge, "grove_persistent", options.blocks, device, resident, per_sm,
                 m.device.multiprocessors, options.threads, shared);
  }
}

DeviceModel::~DeviceModel() {
  if (!impl_ || !impl_->context) return;
  api().ctx_set_current(impl_->context);
  impl_->params.clear();
  impl_->packed.clear();
  if (impl_->module) api().module_unload(impl_->module);
  api().primary_ctx_release(impl_->device_handle);
}

const CudaSource &DeviceModel::source() const { return impl_->source; }

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
  m.params = std::move(params);
  m.packed = std::move(packed);
}

// Steps: the inspector's arrays in one buffer, one copy; the states (zeroed: the DAG zero row),
// the scratch and the barrier's counter (zeroed); the launches (the persistent kernel
// cooperatively, never otherwise); synchronize; the output state back, the roots' rows kept.
std::vector<float> DeviceModel::execute(const LinearizedBatch &batch) const {
  Impl &m = *impl_;
  std::lock_guard guard(m.lock);
  if (m.params.empty() && !m.abi.params.empty()) user_error(msg::kNoWeights, m.abi.model);
  const Api &a = loaded_api();
  check(a.ctx_set_current(m.context), "cuCtxSetCurrent");
  std::vector<int32_t> ints;
  auto append = [&](const std::vector<int32_t> &v) {
    size_t at = ints.size();
    ints.insert(ints.end(), v.begin(), v.end());
    if (v.empty()) ints.push_back(0);
    return at;
  };
  const size_t level_at = append(batch.level_begin), child_begin_at = append(batch.child_begin),
               children_at = append(batch.children), token_at = append(batch.token),
               team_at = append(batch.team_begin);
  DeviceBuffer inspector(ints.size() * 4);
  inspector.upload(ints.data(), ints.size() * 4);
  auto at = [&](size_t offset) {
    return static_cast<const void *>(static_cast<const int32_t *>(inspector.get()) + offset);
  };

  const int64_t rows = int64_t(batch.num_nodes) + (batch.zero_node >= 0 ? 1 : 0);
  std::vector<DeviceBuffer> states;
  for (const ModelAbi::State &s : m.abi.states) {
    states.emplace_back(size_t(rows * s.row_elements) * 4);
    states.back().zero();
  }
  DeviceBuffer scratch(size_t(batch.num_nodes * m.source.scratch_floats_per_node) * 4), barrier(4);
  barrier.zero();

  CallBuffers buffers;
  for (const DeviceBuffer &p : m.params) buffers.params.push_back(p.get());
  for (const DeviceBuffer &p : m.packed) buffers.packed.push_back(p.get());
  for (DeviceBuffer &s : states) buffers.states.push_back(s.get());
  buffers.level_begin = at(level_at);
  buffers.child_begin = at(child_begin_at);
  buffers.children = at(children_at);
  buffers.token = at(token_at);
  buffers.team_begin = at(team_at);
  buffers.scratch = scratch.get();
  buffers.barrier = barrier.get();
  KernelArgs args(m.abi, buffers, batch.num_levels);
  const CudaOptions &o = m.source.options;
  const unsigned shared = unsigned(m.source.shared_bytes);
  for_each_launch(m.source, batch.num_levels, [&](const std::string &kernel, int32_t level) {
    args.set_level(level);
    Handle f = m.functions.at(kernel);
    if (o.form == Form::Persistent)
      check(a.launch_cooperative(f, unsigned(o.blocks), 1, 1, unsigned(o.threads), 1, 1, shared, nullptr,
                                 args.argv()),
            "cuLaunchCooperativeKernel");
    else
      check(
          a.launch(f, unsigned(o.blocks), 1, 1, unsigned(o.threads), 1, 1, 0, nullptr, args.argv(), nullptr),
          "cuLaunchKernel");
  });
  check(a.ctx_synchronize(), "cuCtxSynchronize");

  const int64_t width = m.abi.output_elements();
  std::vector<float> out(size_t(rows * width));
  check(a.memcpy_dtoh(out.data(), states[m.abi.output].address(), out.size() * 4), "cuMemcpyDtoH");
  std::vector<float> result;
  for (int32_t root : batch.roots)
    result.insert(result.end(), out.begin() + int64_t(root) * width, out.begin() + int64_t(root + 1) * width);
  return result;
}

Tensor DeviceModel::run(std::span<const Tree> trees) const {
  const ModelAbi &abi = impl_->abi;
  if (abi.runs_dags()) user_error(msg::kWrongInputs, abi.model, abi.structure, "DAGs or sequences", "trees");
  InspectorOptions options;
  options.arity = {abi.min_children, abi.max_children};
  options.vocab_size = abi.vocab_size;
  std::vector<int64_t> shape{int64_t(trees.size())};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  if (!trees.empty()) result.data = execute(linearize(trees, options));
  return result;
}

Tensor DeviceModel::run_dags(std::span<const Dag> dags, DagOutputs outputs) const {
  const ModelAbi &abi = impl_->abi;
  if (!abi.runs_dags()) user_error(msg::kWrongInputs, abi.model, abi.structure, "trees", "DAGs");
  DagInspectorOptions options;
  options.slots = abi.predecessor_slots;
  options.vocab_size = abi.vocab_size;
  options.outputs = outputs;
  std::vector<float> rows = dags.empty() ? std::vector<float>{} : execute(linearize_dags(dags, options));
  std::vector<int64_t> shape{int64_t(rows.size()) / abi.output_elements()};
  shape.insert(shape.end(), abi.output_shape.begin(), abi.output_shape.end());
  Tensor result(shape);
  result.data = std::move(rows);
  return result;
}

}  // namespace grove::cuda
