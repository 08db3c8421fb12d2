#pragma once
// Every user-facing message of the CUDA back end (backends/cuda), in one place.

#include "backends/runtime/CudaMessages.h"

namespace grove::cuda_messages {

// Emitting (CudaEmitter.h).
inline constexpr char kUnboundSize[] =
    "the CUDA back end needs every size bound: {} is not (give it with --sizes or a weights file)";
inline constexpr char kBadGrid[] =
    "the CUDA kernels need at least one block of at least one thread, got {} x {}";
inline constexpr char kBadForm[] = "unknown CUDA kernel form '{}': use per_level or persistent";
inline constexpr char kBadBarrier[] = "unknown grid barrier '{}': use counter or grid_sync";
inline constexpr char kBadCudaOption[] =
    "{}: '{}' is not a CUDA option: use form=per_level|persistent, barrier=counter|grid_sync, blocks=N, "
    "threads=N, shared_limit=BYTES, graph=on|off";
inline constexpr char kBadCudaGraph[] = "{}: graph={} is not on or off";
inline constexpr char kBadCudaValue[] = "{}: {}={} is not a number in [{}, {}]";
inline constexpr char kNoteBatch[] =
    "batch=off does not apply to the CUDA kernels: they run the nodes of one height level together";
inline constexpr char kNoteGraphPersistent[] =
    "graph={} does not apply to the persistent form: its call is one cooperative launch (graphs replay "
    "the per-level form's launches)";
inline constexpr char kNoteCpuOnly[] =
    "{} does not apply to the CUDA kernels (a CPU loop shape; the grid is set by the CUDA options)";

// Running on the CPU (HostEmulation.h).
inline constexpr char kHostBuild[] = "the CUDA emulation could not build the kernels: `{}` failed ({}):\n{}";
inline constexpr char kHostNoCompiler[] = "no such C++ compiler: install one, or name it in $CXX";
inline constexpr char kHostLoad[] = "the CUDA emulation could not load {}: {}";
inline constexpr char kWeightMissing[] = "the CUDA kernels of {} need the weight {} {}";
inline constexpr char kNoWeights[] = "the CUDA kernels of {} have no weights bound";
inline constexpr char kWrongInputs[] = "the CUDA kernels of {} ({}) take {}, not {}";

// NVRTC (Nvrtc.h).
inline constexpr char kNoNvrtc[] =
    "NVRTC could not be loaded ({}): install the CUDA toolkit (libnvrtc.so.13), put its lib64 folder in "
    "LD_LIBRARY_PATH, or name the library in $GROVE_NVRTC";
inline constexpr char kNvrtcMissingSymbol[] =
    "NVRTC ({}) has no function {}: it is not a CUDA 12 or 13 NVRTC";
inline constexpr char kNvrtcFailed[] = "NVRTC could not compile the kernels of {} for {}: {}\n{}";
inline constexpr char kBadArch[] =
    "unknown GPU architecture '{}': use sm_XX (a cubin) or compute_XX (PTX), e.g. sm_90";

// The driver and the device runner (backends/runtime/CudaMessages.h: the runtime's, named here too).
using cuda_driver_messages::kDriverCall;
using cuda_driver_messages::kDriverMissingSymbol;
using cuda_driver_messages::kGridTooLarge;
using cuda_driver_messages::kNoCooperative;
using cuda_driver_messages::kNoDevice;
using cuda_driver_messages::kNoDriver;
using cuda_driver_messages::kSharedTooLarge;

// `grove compile --target cuda` (Aot.h).
inline constexpr char kAotBadArch[] =
    "{}: '{}' is not a GPU architecture: use sm_XX (a cubin) or compute_XX (PTX), e.g. sm_90,sm_80";
inline constexpr char kAotNoArch[] = "{}: no GPU architecture given";
inline constexpr char kAotNoImage[] = "{}: --no-ptx with only PTX architectures leaves no kernels to embed";
// Writing the libraries (the name, the output directory, the toolchain, the embedded weights' sizes):
// backends/aot/Messages.h.

// `grove run|bench|tune|compile --target cuda`.
inline constexpr char kTargetCudaNeedsDriver[] =
    "--target cuda: {}; `grove dump --stage cuda` writes the kernels without a GPU";
inline constexpr char kTargetCudaNotWired[] =
    "--target cuda: grove {} searches CPU schedules only (the CUDA driver is present: {}); time a CUDA grid "
    "with `grove bench --target cuda --cuda blocks=N,threads=N`";
inline constexpr char kTargetCudaMpi[] =
    "--target cuda: grove run does not share a GPU run among MPI ranks; run it in one process";
inline constexpr char kNoteTargetCudaThreads[] =
    "--threads {} does not apply to --target cuda: the grid is set by --cuda blocks=N,threads=N";
inline constexpr char kNoteTargetCudaTuned[] =
    "--tuned does not apply to --target cuda: grove tune caches CPU schedules; the GPU runs --schedule and "
    "--cuda";
inline constexpr char kNoteTargetCudaCache[] = "--cache does not apply to --target cuda (it is --tuned's)";
inline constexpr char kNoteCudaWithoutTarget[] =
    "--cuda {} applies only with --target cuda: the CPU's kernels ignore it";

}  // namespace grove::cuda_messages
