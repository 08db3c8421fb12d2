#pragma once
// The user-facing messages of the CUDA driver and the device runner (CudaDriver.h, CudaRunner.h),
// shared with the CUDA back end (backends/cuda/Messages.h names them too).

namespace grove::cuda_driver_messages {

// The driver.
inline constexpr char kNoDriver[] = "no CUDA driver: {} could not be loaded ({})";
inline constexpr char kDriverMissingSymbol[] =
    "the CUDA driver {} has no function {}: it is older than CUDA 12";
inline constexpr char kDriverCall[] = "the CUDA driver failed in {}: {} ({})";
inline constexpr char kNoDevice[] = "no CUDA device: the driver reports {} devices";
inline constexpr char kNoCooperative[] =
    "CUDA device {} cannot launch cooperative kernels, which the persistent form needs";
inline constexpr char kGridTooLarge[] =
    "the persistent kernel {} needs {} co-resident blocks, but device {} holds only {} ({} per "
    "multiprocessor "
    "x {} multiprocessors at {} threads and {} bytes of shared memory): emit it for a smaller grid";
inline constexpr char kSharedTooLarge[] =
    "the kernel {} needs {} bytes of shared memory per block, but device {} allows {}: lower the shared "
    "limit";

// A library's embedded kernels (CudaRunner.h).
inline constexpr char kNoImages[] = "{}: a CUDA library without kernels (no cubin and no PTX in it)";
inline constexpr char kImageMismatch[] =
    "{}: the CUDA kernels embedded in the library ({}) do not match its description ({})";
inline constexpr char kImageCorrupt[] =
    "{}: the embedded CUDA image {} is corrupt: {} bytes with checksum {:016x}, the description says {} "
    "bytes "
    "with checksum {:016x}";
inline constexpr char kNoImageForDevice[] =
    "{}: no CUDA kernels for device {} ({}, {}): the library holds {} — a cubin runs on its own major "
    "architecture at the same or a later minor one, PTX on its architecture or later; recompile with "
    "`grove compile --target cuda --arch {}`";
inline constexpr char kNotCudaLibrary[] = "{}: the description has target cuda but no CUDA launch (\"cuda\")";

}  // namespace grove::cuda_driver_messages
