#pragma once
// The CUDA driver API, loaded at run time with dlopen — never linked, so every grove binary (and a
// program linking only libgrove_runtime) starts on a machine without a driver. The one table of
// the driver's entry points in grove: the device runner (CudaRunner.h) and, through it, the CUDA
// back end's DeviceModel (backends/cuda/Driver.h) call the driver through it.
//
// The library: $GROVE_CUDA_DRIVER if set (a path or a name for dlopen; the tests name a fake driver,
// tests/backends/cuda/FakeDriver.cpp, that runs the kernels' host build on the CPU), else
// libcuda.so.1. Without it every entry point throws the UserError "no CUDA driver: libcuda.so.1
// could not be loaded (...)". Entry points are loaded by their exported names (the _v2 ones that
// cuda.h maps to in CUDA 12 and 13), declared here: no cuda.h is needed to build grove.

#include <cstddef>
#include <cstdint>
#include <string>

#include "support/Error.h"

namespace grove::cuda {

// CUDA_ERROR_OUT_OF_MEMORY from any driver call: a UserError (exit 1 on the command line) that the
// C API reports as GROVE_ERROR_OUT_OF_MEMORY.
class DeviceOutOfMemory : public UserError {
 public:
  using UserError::UserError;
};

using CUresult = int;  // 0: CUDA_SUCCESS
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using Handle = void *;  // contexts, modules, functions, streams, graphs

inline constexpr int kAttrMultiprocessors = 16, kAttrMajor = 75, kAttrMinor = 76, kAttrCooperative = 95,
                     kAttrSharedOptin = 97;
inline constexpr int kFuncMaxDynamicShared = 8;
inline constexpr size_t kDefaultSharedLimit = 48 * 1024;
inline constexpr int kCaptureModeThreadLocal = 1;  // CU_STREAM_CAPTURE_MODE_THREAD_LOCAL

struct CudaApi {
  void *handle = nullptr;
  std::string library;  // what was opened: $GROVE_CUDA_DRIVER or libcuda.so.1
  std::string error;    // why it cannot be used; empty when it can
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

// The table, loaded and cuInit-ed once per process (its `error` says why it cannot be used).
const CudaApi &cuda_api();
// The same, or the UserError of `error`.
const CudaApi &loaded_cuda_api();
// Every driver call goes through this: a failure is the UserError "the CUDA driver failed in
// `call`: NAME (text)" (DeviceOutOfMemory for CUDA_ERROR_OUT_OF_MEMORY).
void cuda_check(CUresult rc, const char *call);

// Whether the driver ($GROVE_CUDA_DRIVER or libcuda.so.1) loads and initializes; if not, `why`
// says why.
bool driver_available(std::string *why = nullptr);

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int major = 0, minor = 0;  // compute capability
  int multiprocessors = 0;
  bool cooperative_launch = false;
  int64_t max_shared_optin = 0;  // bytes per block with the opt-in attribute
  std::string arch() const { return "sm_" + std::to_string(major * 10 + minor); }
};

// Device `ordinal`'s properties (UserError without a driver or such a device).
DeviceInfo device_info(int ordinal = 0);

// A device allocation (at least 4 bytes), freed with its owner.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  DeviceBuffer(DeviceBuffer &&o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = 0; }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  ~DeviceBuffer();
  void upload(const void *data, size_t bytes);
  void zero();
  void *get() const { return reinterpret_cast<void *>(ptr_); }
  CUdeviceptr address() const { return ptr_; }
  size_t bytes() const { return bytes_; }

 private:
  CUdeviceptr ptr_ = 0;
  size_t bytes_ = 0;
};

}  // namespace grove::cuda
