// run_kit KIT_DIR [FILTER]: runs a GPU check kit (Kit.h) on the device, with only the CUDA toolkit:
// NVRTC compiles each case's kernels for the device's architecture, the driver API loads and
// launches them (the persistent kernel cooperatively, after checking its grid against the
// co-resident blocks), the checked cases are compared with the reference, and the timed cases are
// run `repeat` times between two events. Prints a markdown table. Build (run_kit.sh does):
//   g++ -std=c++17 -O2 -I$CUDA/include RunKit.cpp -o run_kit -L$CUDA/lib64 -lnvrtc -lcuda
// Never run yet: no GPU was lent when it was written; its emulated twin (tests/backends/cuda/test_cuda_kit)
// checks the kit's files, arguments and launch order on the CPU.

#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "Kit.h"

namespace {

void check(CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS) return;
  const char *name = "?", *text = "?";
  cuGetErrorName(rc, &name);
  cuGetErrorString(rc, &text);
  throw std::runtime_error(std::string(what) + ": " + name + " (" + text + ")");
}

std::string read_text(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + path);
  return s.str();
}

std::vector<char> compile(const std::string &source, const std::string &name, int major, int minor,
                          std::string *log) {
  nvrtcProgram p;
  if (nvrtcCreateProgram(&p, source.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS)
    throw std::runtime_error("nvrtcCreateProgram failed");
  const std::string arch = "--gpu-architecture=sm_" + std::to_string(major * 10 + minor);
  const std::string cuda = std::getenv("CUDA_HOME") ? std::getenv("CUDA_HOME") : "/usr/local/cuda";
  const std::string inc = "-I" + cuda + "/include", cccl = "-I" + cuda + "/include/cccl";
  const char *opts[] = {arch.c_str(), "--std=c++17", inc.c_str(), cccl.c_str(), "--ptxas-options=-v"};
  nvrtcResult rc = nvrtcCompileProgram(p, 5, opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(p, &n);
  log->assign(n, '\0');
  nvrtcGetProgramLog(p, log->data());
  if (rc != NVRTC_SUCCESS) throw std::runtime_error(name + ": " + nvrtcGetErrorString(rc) + "\n" + *log);
  nvrtcGetCUBINSize(p, &n);
  std::vector<char> cubin(n);
  nvrtcGetCUBIN(p, cubin.data());
  nvrtcDestroyProgram(&p);
  return cubin;
}

struct Result {
  std::string status;
  double ms_per_call = 0;
};

Result run_case(const std::string &dir, const grove_kit::Case &c, CUdevice dev, int major, int minor,
                int sms) {
  std::string log;
  std::vector<char> cubin = compile(read_text(dir + "/" + c.source), c.source, major, minor, &log);
  CUmodule module;
  check(cuModuleLoadData(&module, cubin.data()), "cuModuleLoadData");
  std::map<std::string, CUfunction> functions;
  for (const grove_kit::Launch &l : c.launches)
    if (!functions.count(l.kernel))
      check(cuModuleGetFunction(&functions[l.kernel], module, l.kernel.c_str()), "cuModuleGetFunction");
  const bool persistent = c.form == "persistent";
  if (persistent) {
    CUfunction f = functions.at("grove_persistent");
    if (c.shared_bytes > 48 * 1024)
      check(cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(c.shared_bytes)),
            "cuFuncSetAttribute");
    int per_sm = 0;
    check(cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, c.threads, size_t(c.shared_bytes)),
          "occupancy");
    if (c.blocks > per_sm * sms)
      throw std::runtime_error(c.name + ": " + std::to_string(c.blocks) + " blocks exceed the " +
                               std::to_string(per_sm * sms) + " co-resident ones");
  }
  // The arguments: device buffers (their addresses in `values`), ints, the level.
  std::vector<CUdeviceptr> buffers(c.args.size(), 0);
  std::vector<unsigned long long> values(c.args.size(), 0);
  std::vector<int> ints(c.args.size(), 0);
  std::vector<void *> params(c.args.size());
  int level_arg = -1, barrier_arg = -1;
  for (size_t i = 0; i < c.args.size(); ++i) {
    const grove_kit::Arg &a = c.args[i];
    if (a.kind == "int") {
      ints[i] = a.value;
      params[i] = &ints[i];
    } else if (a.kind == "level") {
      level_arg = int(i);
      params[i] = &ints[i];
    } else {
      std::vector<uint32_t> words = grove_kit::initial_words(dir, a);
      check(cuMemAlloc(&buffers[i], std::max<size_t>(4, words.size() * 4)), "cuMemAlloc");
      if (!words.empty()) check(cuMemcpyHtoD(buffers[i], words.data(), words.size() * 4), "cuMemcpyHtoD");
      if (a.kind == "u32zero") barrier_arg = int(i);
      values[i] = buffers[i];
      params[i] = &values[i];
    }
  }
  auto call = [&] {
    if (barrier_arg >= 0)
      check(cuMemsetD32Async(buffers[barrier_arg], 0, size_t(c.args[barrier_arg].count), nullptr),
            "cuMemsetD32");
    for (const grove_kit::Launch &l : c.launches) {
      if (level_arg >= 0) ints[level_arg] = l.level;
      CUfunction f = functions.at(l.kernel);
      if (persistent)
        check(cuLaunchCooperativeKernel(f, c.blocks, 1, 1, c.threads, 1, 1, unsigned(c.shared_bytes), nullptr,
                                        params.data()),
              "cuLaunchCooperativeKernel");
      else
        check(cuLaunchKernel(f, c.blocks, 1, 1, c.threads, 1, 1, 0, nullptr, params.data(), nullptr),
              "cuLaunchKernel");
    }
  };
  Result r;
  call();
  check(cuCtxSynchronize(), "the first call");
  if (!c.expected.empty()) {
    std::vector<float> state(size_t(c.args[c.output_arg].count));
    check(cuMemcpyDtoH(state.data(), buffers[c.output_arg], state.size() * 4), "cuMemcpyDtoH");
    const int bad = grove_kit::compare_output(dir, c, state);
    r.status = bad == 0 ? "ok" : std::to_string(bad) + " mismatches";
  } else {
    r.status = "timed";
  }
  if (c.repeat > 0) {
    CUevent start, stop;
    check(cuEventCreate(&start, 0), "cuEventCreate");
    check(cuEventCreate(&stop, 0), "cuEventCreate");
    check(cuEventRecord(start, nullptr), "cuEventRecord");
    for (int i = 0; i < c.repeat; ++i) call();
    check(cuEventRecord(stop, nullptr), "cuEventRecord");
    check(cuEventSynchronize(stop), "cuEventSynchronize");
    float ms = 0;
    check(cuEventElapsedTime(&ms, start, stop), "cuEventElapsedTime");
    r.ms_per_call = ms / c.repeat;
    cuEventDestroy(start);
    cuEventDestroy(stop);
  }
  for (CUdeviceptr b : buffers)
    if (b) cuMemFree(b);
  cuModuleUnload(module);
  return r;
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: run_kit KIT_DIR [NAME_SUBSTRING]\n");
    return 2;
  }
  const std::string dir = argv[1], filter = argc > 2 ? argv[2] : "";
  try {
    check(cuInit(0), "cuInit");
    CUdevice dev;
    check(cuDeviceGet(&dev, 0), "cuDeviceGet");
    int major = 0, minor = 0, sms = 0, coop = 0;
    cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
    cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
    cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
    cuDeviceGetAttribute(&coop, CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, dev);
    char name[256] = {};
    cuDeviceGetName(name, sizeof(name), dev);
    CUcontext ctx;
    check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
    check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
    std::printf("device: %s (sm_%d%d, %d SMs, cooperative launch %s)\n\n", name, major, minor, sms,
                coop ? "yes" : "no");
    std::printf("| case | result | ms per call |\n|---|---|---|\n");
    int failures = 0;
    for (const grove_kit::Case &c : grove_kit::read_kit(dir)) {
      if (c.name.find(filter) == std::string::npos) continue;
      std::fprintf(stderr, "%s...\n", c.name.c_str());
      try {
        Result r = run_case(dir, c, dev, major, minor, sms);
        failures += r.status != "ok" && r.status != "timed";
        std::printf("| %s | %s | %.4f |\n", c.name.c_str(), r.status.c_str(), r.ms_per_call);
      } catch (const std::exception &e) {
        ++failures;
        std::printf("| %s | error: %s | |\n", c.name.c_str(), e.what());
      }
      std::fflush(stdout);
    }
    return failures == 0 ? 0 : 1;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "run_kit: %s\n", e.what());
    return 1;
  }
}
