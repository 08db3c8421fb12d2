#pragma once
// The command line's CUDA side: `grove dump --stage cuda|ptx` (the kernels' source, and PTX through
// NVRTC), `grove run|bench --target cuda` (the kernels on the GPU through backends/cuda/Driver.h's
// DeviceModel), and what `grove tune --target cuda` answers (`grove compile --target cuda` is
// tools/CompileCommand.cpp's, over backends/cuda/Aot.h).

#include <map>
#include <memory>
#include <ostream>
#include <string>

#include "backends/cuda/Driver.h"
#include "tools/Bench.h"
#include "tools/Commands.h"

namespace grove::tool {

// Whether a --target asks for the GPU.
inline bool is_cuda_target(const std::string &target) { return target == "cuda"; }

// `grove dump --stage cuda` or `--stage ptx`.
int dump_cuda(const DumpCommand &c);

// `grove run --target cuda` is run_cuda (tools/Run.h), the grove program's; what it shares with
// bench is here.

// Without a driver, a UserError saying why (before anything is read).
void require_cuda_driver();
// What the GPU does not take of the CPU's options: a note each.
void note_cpu_only_options(int64_t threads, bool tuned, const std::string &cache);
// The model on device 0: the plan for the GPU (notes for the schedule), the kernels in the form
// `cuda_options` asks for (notes for what they do not follow), compiled, loaded and bound.
std::unique_ptr<cuda::DeviceModel> prepare_device_model(const ilir::Program &program,
                                                        const std::map<std::string, int64_t> &sizes,
                                                        const std::string &schedule,
                                                        const std::string &cuda_options,
                                                        const Weights &weights);
// "cuda (form=...) on NVIDIA H200 (sm_90, 132 multiprocessors)".
std::string cuda_target_line(const cuda::DeviceModel &model);
// One chunk of `format`'s inputs on the device, as the Executor runs it (tools/StreamRun.h).
Tensor run_chunk_on_device(const cuda::DeviceModel &model, InputFormat format, const InputChunk &chunk,
                           const RunOptions &options, RunStats &stats);

// `grove bench --target cuda`: the CPU bench's protocol and report over the GPU's calls, with the
// target, the CUDA form and the GPU's name.
int bench_cuda(const BenchCommand &c, std::ostream &out);

// A note that --cuda does not apply when the target is not cuda (nothing if `cuda` is empty).
void note_unused_cuda_options(const std::string &cuda);

// `grove tune --target cuda`: a UserError, before anything is read or written — without a driver
// it says why; with one, that grove tune searches CPU schedules only.
[[noreturn]] void refuse_cuda_target(const std::string &command);

}  // namespace grove::tool
