#include "backends/runtime/CudaDriver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <type_traits>
#include <utility>

#include "backends/runtime/CudaMessages.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_driver_messages;

const CudaApi &cuda_api() {
  static const CudaApi loaded = [] {
    CudaApi a;
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

const CudaApi &loaded_cuda_api() {
  const CudaApi &a = cuda_api();
  if (!a.error.empty()) throw UserError(a.error);
  return a;
}

void cuda_check(CUresult rc, const char *call) {
  if (rc == 0) return;
  const CudaApi &a = cuda_api();
  const char *name = "?", *text = "?";
  a.get_error_name(rc, &name);
  a.get_error_string(rc, &text);
  constexpr CUresult kOutOfMemory = 2;  // CUDA_ERROR_OUT_OF_MEMORY
  const std::string message = fmt::format(msg::kDriverCall, call, name ? name : "?", text ? text : "?");
  if (rc == kOutOfMemory) throw DeviceOutOfMemory(message);
  throw UserError(message);
}

bool driver_available(std::string *why) {
  const CudaApi &a = cuda_api();
  if (why) *why = a.error;
  return a.error.empty();
}

DeviceInfo device_info(int ordinal) {
  const CudaApi &a = loaded_cuda_api();
  int count = 0;
  cuda_check(a.device_get_count(&count), "cuDeviceGetCount");
  if (ordinal < 0 || ordinal >= count) user_error(msg::kNoDevice, count);
  CUdevice dev = 0;
  cuda_check(a.device_get(&dev, ordinal), "cuDeviceGet");
  DeviceInfo info;
  info.ordinal = ordinal;
  char name[256] = {};
  cuda_check(a.device_get_name(name, sizeof(name), dev), "cuDeviceGetName");
  info.name = name;
  int v = 0;
  cuda_check(a.device_get_attribute(&info.major, kAttrMajor, dev), "cuDeviceGetAttribute");
  cuda_check(a.device_get_attribute(&info.minor, kAttrMinor, dev), "cuDeviceGetAttribute");
  cuda_check(a.device_get_attribute(&info.multiprocessors, kAttrMultiprocessors, dev),
             "cuDeviceGetAttribute");
  cuda_check(a.device_get_attribute(&v, kAttrCooperative, dev), "cuDeviceGetAttribute");
  info.cooperative_launch = v != 0;
  cuda_check(a.device_get_attribute(&v, kAttrSharedOptin, dev), "cuDeviceGetAttribute");
  info.max_shared_optin = v;
  return info;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(std::max<size_t>(bytes, 4)) {
  cuda_check(loaded_cuda_api().mem_alloc(&ptr_, bytes_), "cuMemAlloc");
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cuda_api().mem_free(ptr_);
}

void DeviceBuffer::upload(const void *data, size_t bytes) {
  if (bytes > 0) cuda_check(cuda_api().memcpy_htod(ptr_, data, bytes), "cuMemcpyHtoD");
}

void DeviceBuffer::zero() { cuda_check(cuda_api().memset_d32(ptr_, 0, bytes_ / 4), "cuMemsetD32"); }

}  // namespace grove::cuda
