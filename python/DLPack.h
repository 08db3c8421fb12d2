#pragma once
// The DLPack structures (https://github.com/dmlc/dlpack, dlpack.h v0.x, ABI-stable since v0.5), written
// out here because Debian ships no dlpack.h. Only what grove exports is declared: a CPU float32
// tensor handed to a consumer (torch.utils.dlpack.from_dlpack, numpy.from_dlpack) as a PyCapsule
// named "dltensor"; the consumer renames the capsule "used_dltensor" and calls `deleter` when it is
// done with the memory.
//
// The layout must match dlpack.h field for field: these structs cross into other libraries.

#include <cstdint>

namespace grove::python::dlpack {

enum DLDeviceType : int32_t { kDLCPU = 1 };

struct DLDevice {
  DLDeviceType device_type;
  int32_t device_id;
};

enum DLDataTypeCode : uint8_t { kDLInt = 0, kDLUInt = 1, kDLFloat = 2 };

struct DLDataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape;
  int64_t *strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(DLManagedTensor *self);
};

// The capsule names of the DLPack Python protocol.
inline constexpr char kCapsuleName[] = "dltensor";
inline constexpr char kUsedCapsuleName[] = "used_dltensor";

static_assert(sizeof(DLDevice) == 8 && sizeof(DLDataType) == 4, "DLPack layout");
static_assert(sizeof(DLTensor) == 48 && sizeof(DLManagedTensor) == 64, "DLPack layout (64-bit)");

}  // namespace grove::python::dlpack
