#include "backends/cuda/Nvrtc.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <regex>
#include <sstream>

#include "backends/cuda/Messages.h"
#include "support/Error.h"

namespace grove::cuda {

namespace msg = cuda_messages;

namespace {

// NVRTC's C interface, declared here so that grove needs neither its header nor its library to
// build: nvrtcResult is an int (0 = NVRTC_SUCCESS), nvrtcProgram an opaque pointer.
using Program = void *;
struct Api {
  void *handle = nullptr;
  std::string path, error;
  const char *(*get_error_string)(int) = nullptr;
  int (*version)(int *, int *) = nullptr;
  int (*create_program)(Program *, const char *, const char *, int, const char *const *,
                        const char *const *) = nullptr;
  int (*compile_program)(Program, int, const char *const *) = nullptr;
  int (*destroy_program)(Program *) = nullptr;
  int (*get_log_size)(Program, size_t *) = nullptr;
  int (*get_log)(Program, char *) = nullptr;
  int (*get_ptx_size)(Program, size_t *) = nullptr;
  int (*get_ptx)(Program, char *) = nullptr;
  int (*get_cubin_size)(Program, size_t *) = nullptr;
  int (*get_cubin)(Program, char *) = nullptr;
};

// Step 1 of every use: open the library once per process and look up the entry points.
const Api &api() {
  static const Api loaded = [] {
    Api a;
    std::string errors;
    std::vector<std::string> candidates = {"libnvrtc.so.13", "libnvrtc.so",
                                           GROVE_CUDA_ROOT "/lib64/libnvrtc.so.13",
                                           GROVE_CUDA_ROOT "/lib64/libnvrtc.so"};
    if (const char *chosen = std::getenv("GROVE_NVRTC"); chosen && *chosen) candidates = {chosen};
    for (const std::string &name : candidates) {
      a.handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (a.handle) {
        a.path = name;
        break;
      }
      const char *e = dlerror();
      errors += (errors.empty() ? "" : "; ") + std::string(e ? e : name);
    }
    if (!a.handle) {
      a.error = errors;
      return a;
    }
    auto find = [&](auto &fn, const char *symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(a.handle, symbol));
      if (!fn && a.error.empty()) a.error = fmt::format(msg::kNvrtcMissingSymbol, a.path, symbol);
    };
    find(a.get_error_string, "nvrtcGetErrorString");
    find(a.version, "nvrtcVersion");
    find(a.create_program, "nvrtcCreateProgram");
    find(a.compile_program, "nvrtcCompileProgram");
    find(a.destroy_program, "nvrtcDestroyProgram");
    find(a.get_log_size, "nvrtcGetProgramLogSize");
    find(a.get_log, "nvrtcGetProgramLog");
    find(a.get_ptx_size, "nvrtcGetPTXSize");
    find(a.get_ptx, "nvrtcGetPTX");
    find(a.get_cubin_size, "nvrtcGetCUBINSize");
    find(a.get_cubin, "nvrtcGetCUBIN");
    return a;
  }();
  return loaded;
}

const Api &loaded_api() {
  const Api &a = api();
  if (!a.handle) user_error(msg::kNoNvrtc, a.error);
  if (!a.error.empty()) user_error("{}", a.error);
  return a;
}

}  // namespace

bool nvrtc_available(std::string *why) {
  const Api &a = api();
  if (why) *why = a.error;
  return a.handle && a.error.empty();
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  loaded_api().version(&major, &minor);
  return fmt::format("{}.{}", major, minor);
}

// ptxas -v prints, per entry function:
//   ptxas info    : Compiling entry function 'grove_persistent' for 'sm_90'
//   ptxas info    : Function properties for grove_persistent
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : Used 40 registers, used 1 barriers, 10240 bytes smem, 400 bytes cmem[0]
std::vector<KernelResources> parse_ptxas_report(const std::string &log) {
  std::vector<KernelResources> out;
  static const std::regex entry(R"(Compiling entry function '([A-Za-z_0-9]+)')");
  static const std::regex frame(
      R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)");
  static const std::regex used(R"(Used (\d+) registers)");
  static const std::regex smem(R"((\d+) bytes smem)");
  std::istringstream in(log);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, entry)) {
      out.push_back({});
      out.back().kernel = m[1];
      continue;
    }
    if (out.empty()) continue;
    KernelResources &k = out.back();
    if (std::regex_search(line, m, frame)) {
      k.stack_bytes = std::stoll(m[1]);
      k.spill_stores = std::stoll(m[2]);
      k.spill_loads = std::stoll(m[3]);
    }
    if (std::regex_search(line, m, used)) k.registers = std::stoi(m[1]);
    if (std::regex_search(line, m, smem)) k.static_shared_bytes = std::stoll(m[1]);
  }
  return out;
}

// Steps: check the architecture's form; create the program; compile with C++17, the toolkit's
// headers (libcu++ under include/cccl) and ptxas's report; read the log, then the cubin or the PTX;
// destroy the program (also on failure).
const NvrtcOutput &compile_with_nvrtc(const CudaSource &source, const std::string &arch,
                                      const std::string &what) {
  static const std::regex arch_form(R"((sm|compute)_[0-9]{2,3}[a-z]?)");
  if (!std::regex_match(arch, arch_form)) user_error(msg::kBadArch, arch);
  static std::mutex lock;
  static std::map<std::pair<std::string, std::string>, std::unique_ptr<NvrtcOutput>> cache;
  {
    std::lock_guard guard(lock);
    if (auto it = cache.find({source.text, arch}); it != cache.end()) return *it->second;
  }
  const Api &a = loaded_api();
  Program program = nullptr;
  int rc = a.create_program(&program, source.text.c_str(), "grove_kernels.cu", 0, nullptr, nullptr);
  if (rc != 0) user_error(msg::kNvrtcFailed, what, arch, a.get_error_string(rc), "");
  std::unique_ptr<Program, void (*)(Program *)> owner(&program, [](Program *p) { api().destroy_program(p); });
  const std::string arch_option = "--gpu-architecture=" + arch;
  const bool cubin = arch.rfind("sm_", 0) == 0;
  std::vector<const char *> options = {arch_option.c_str(), "--std=c++17", "-I" GROVE_CUDA_ROOT "/include",
                                       "-I" GROVE_CUDA_ROOT "/include/cccl"};
  if (cubin) options.push_back("--ptxas-options=-v");
  rc = a.compile_program(program, int(options.size()), options.data());
  size_t log_size = 0;
  a.get_log_size(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) a.get_log(program, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  if (rc != 0) user_error(msg::kNvrtcFailed, what, arch, a.get_error_string(rc), log);
  auto out = std::make_unique<NvrtcOutput>();
  out->arch = arch;
  out->is_cubin = cubin;
  out->log = log;
  size_t size = 0;
  if (cubin) {
    a.get_cubin_size(program, &size);
    out->image.resize(size);
    a.get_cubin(program, out->image.data());
    out->kernels = parse_ptxas_report(log);
  } else {
    a.get_ptx_size(program, &size);
    out->image.resize(size);
    a.get_ptx(program, out->image.data());
    while (!out->image.empty() && out->image.back() == '\0') out->image.pop_back();
  }
  std::lock_guard guard(lock);
  auto &slot = cache[{source.text, arch}];
  if (!slot) slot = std::move(out);
  return *slot;
}

}  // namespace grove::cuda
