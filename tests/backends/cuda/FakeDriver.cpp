// A fake CUDA driver (libgrove_fake_cuda.so) for the tests of the device path: grove loads it in
// place of libcuda.so.1 when $GROVE_CUDA_DRIVER names it (backends/cuda/Driver.h). It exports the
// driver entry points Driver.cpp loads, by the same names, and behaves as one H200 would as far as
// grove can tell:
//   * "device" memory is host memory (a CUdeviceptr is the host address), counted against
//     $GROVE_FAKE_CUDA_MEMORY bytes when set: past it cuMemAlloc_v2 fails with
//     CUDA_ERROR_OUT_OF_MEMORY, named and described as the real driver does;
//   * cuModuleLoadData checks that the image is a cubin (an ELF file) or PTX text (.version and
//     .target: the real driver JIT-compiles it), reads each kernel's parameter sizes from the cubin's
//     .nv.info section or the PTX's .entry parameters (what a launch copies), and then runs the kernels
//     from their host build instead: $GROVE_FAKE_CUDA_KERNELS names the shared object built from the
//     same source with the host compiler against backends/cuda/Simt.h (HostEmulation.h's build),
//     whose `grove_host_<kernel>(args, blocks, threads, shared_bytes)` runs a launch on host threads;
//   * launches run at once (synchronously), or are recorded while their stream captures; a graph is
//     the recorded launches with their argument values copied at capture, and cuGraphLaunch replays
//     them;
//   * the device is an sm_90 with $GROVE_FAKE_CUDA_SMS multiprocessors (132), 227 KB of opt-in
//     shared memory per block, cooperative launches unless $GROVE_FAKE_CUDA_COOPERATIVE=0, and
//     $GROVE_FAKE_CUDA_DEVICES devices (1; 0 makes cuDeviceGetCount report none). The occupancy
//     answer is $GROVE_FAKE_CUDA_BLOCKS_PER_SM if set, else what 2048 threads, 32 blocks and 228 KB
//     of shared memory per multiprocessor allow; a cooperative launch past it fails as the real one.
// $GROVE_FAKE_CUDA_LOG names a file that gets one line per module load (cubin or ptx), launch,
// capture and graph launch.
// grove_fake_cuda_counts() tells a test in the same process how many captures and graph launches ran.

#include <dlfcn.h>
#include <elf.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using HostLaunch = void (*)(void **args, unsigned blocks, unsigned threads, unsigned long shared_bytes);

constexpr CUresult kSuccess = 0, kInvalidValue = 1, kOutOfMemory = 2, kNotInitialized = 3,
                   kInvalidDevice = 101, kInvalidImage = 200, kInvalidHandle = 400, kNotFound = 500,
                   kLaunchTooLarge = 720, kNotSupported = 801, kCaptureUnsupported = 900;

struct ErrorText {
  CUresult code;
  const char *name, *text;
};
constexpr ErrorText kErrors[] = {
    {kSuccess, "CUDA_SUCCESS", "no error"},
    {kInvalidValue, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {kOutOfMemory, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {kNotInitialized, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {kInvalidDevice, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {kInvalidImage, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {kInvalidHandle, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {kNotFound, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {kLaunchTooLarge, "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE", "too many blocks in cooperative launch"},
    {kNotSupported, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {kCaptureUnsupported, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
};

int64_t env_number(const char *name, int64_t fallback) {
  const char *v = std::getenv(name);
  if (!v || !*v) return fallback;
  return std::strtoll(v, nullptr, 10);
}

constexpr int kSharedOptin = 232448;  // an H200's 227 KB per block
constexpr int kDefaultShared = 48 * 1024;

struct Function {
  std::string name;
  HostLaunch run = nullptr;
  std::vector<size_t> param_sizes;  // from the cubin's .nv.info (ordinal order)
  int max_dynamic_shared = kDefaultShared;
};

struct Module {
  void *library = nullptr;
  std::map<std::string, std::vector<size_t>> params;
  std::map<std::string, std::unique_ptr<Function>> functions;
};

// One launch as a graph keeps it: the arguments' bytes copied at capture.
struct Launch {
  Function *function = nullptr;
  unsigned blocks = 0, threads = 0, shared = 0;
  bool cooperative = false;
  std::vector<std::vector<char>> args;
};

struct Stream {
  bool capturing = false;
  std::vector<Launch> recorded;
};

struct Graph {
  std::vector<Launch> launches;
};

struct State {
  std::mutex lock;
  bool initialized = false;
  std::map<CUdeviceptr, size_t> allocations;
  int64_t bytes_in_use = 0;
  int captures = 0, graph_launches = 0;
  int context = 0;  // the primary context's handle points here
};

State &state() {
  static State s;
  return s;
}

thread_local int capturing_streams = 0;  // this thread's streams in capture

void log_line(const std::string &line) {
  const char *path = std::getenv("GROVE_FAKE_CUDA_LOG");
  if (!path || !*path) return;
  if (FILE *f = std::fopen(path, "a")) {
    std::fprintf(f, "%s\n", line.c_str());
    std::fclose(f);
  }
}

// Each kernel's parameter sizes, from the EIATTR_KPARAM_INFO records (attribute 0x17, 12 bytes:
// index, ordinal, offset, then the size in bits 18-31) of its ".nv.info.<kernel>" section.
std::map<std::string, std::vector<size_t>> kernel_params(const unsigned char *image) {
  std::map<std::string, std::vector<size_t>> out;
  const auto *eh = reinterpret_cast<const Elf64_Ehdr *>(image);
  if (eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shoff == 0) return out;
  const auto *sh = reinterpret_cast<const Elf64_Shdr *>(image + eh->e_shoff);
  const char *names = reinterpret_cast<const char *>(image + sh[eh->e_shstrndx].sh_offset);
  for (unsigned i = 0; i < eh->e_shnum; ++i) {
    const std::string name = names + sh[i].sh_name;
    if (name.rfind(".nv.info.", 0) != 0) continue;
    std::vector<size_t> &sizes = out[name.substr(9)];
    const unsigned char *p = image + sh[i].sh_offset, *end = p + sh[i].sh_size;
    while (p + 4 <= end) {
      const unsigned format = p[0], attribute = p[1];
      if (format != 4) {  // no value, a byte or a half word: four bytes in all
        p += 4;
        continue;
      }
      uint16_t size = 0;
      std::memcpy(&size, p + 2, 2);
      if (attribute == 0x17 && size >= 12) {
        uint16_t ordinal = 0;
        uint32_t packed = 0;
        std::memcpy(&ordinal, p + 8, 2);
        std::memcpy(&packed, p + 12, 4);
        if (sizes.size() <= ordinal) sizes.resize(ordinal + 1, 0);
        sizes[ordinal] = (packed >> 18) & 0x3fff;
      }
      p += 4 + size;
    }
  }
  return out;
}

// The same from PTX text (what the JIT would compile): each `.entry NAME(` and its `.param`s, a
// parameter's size from its type (.u64 and the like 8 bytes, 32-bit types 4) or its `[N]` bytes.
std::map<std::string, std::vector<size_t>> ptx_kernel_params(const char *text) {
  std::map<std::string, std::vector<size_t>> out;
  const std::string ptx(text);
  for (size_t at = ptx.find(".entry "); at != std::string::npos; at = ptx.find(".entry ", at + 1)) {
    const size_t open = ptx.find('(', at), close = ptx.find(')', at);
    if (open == std::string::npos || close == std::string::npos || close < open) break;
    std::string name = ptx.substr(at + 7, open - at - 7);
    while (!name.empty() && std::isspace(static_cast<unsigned char>(name.back()))) name.pop_back();
    std::vector<size_t> &sizes = out[name];
    const std::string params = ptx.substr(open + 1, close - open - 1);
    size_t begin = 0;
    while (begin < params.size()) {
      size_t end = params.find(',', begin);
      if (end == std::string::npos) end = params.size();
      const std::string p = params.substr(begin, end - begin);
      begin = end + 1;
      if (p.find(".param") == std::string::npos) continue;
      if (size_t b = p.find('['); b != std::string::npos)
        sizes.push_back(std::strtoull(p.c_str() + b + 1, nullptr, 10));
      else if (p.find("64 ") != std::string::npos)
        sizes.push_back(8);
      else
        sizes.push_back(4);
    }
  }
  return out;
}

int blocks_per_sm(int threads, size_t shared) {
  if (int64_t v = env_number("GROVE_FAKE_CUDA_BLOCKS_PER_SM", -1); v >= 0) return int(v);
  int by_threads = threads > 0 ? 2048 / threads : 0;
  int by_shared = int((228 * 1024) / (shared + 1024));
  return std::min({32, by_threads, by_shared});
}

CUresult run(const Launch &l, void **argv) {
  l.function->run(argv, l.blocks, l.threads, l.shared);
  return kSuccess;
}

CUresult launch(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                unsigned shared, void *stream, void **params, bool cooperative) {
  auto *fn = static_cast<Function *>(f);
  if (!fn || !params || gy * gz != 1 || by * bz != 1) return kInvalidValue;
  if (shared > unsigned(fn->max_dynamic_shared)) return kInvalidValue;
  if (cooperative) {
    if (env_number("GROVE_FAKE_CUDA_COOPERATIVE", 1) == 0) return kNotSupported;
    if (int64_t(gx) > int64_t(blocks_per_sm(int(bx), shared)) * env_number("GROVE_FAKE_CUDA_SMS", 132))
      return kLaunchTooLarge;
  }
  Launch l{fn, gx, bx, shared, cooperative, {}};
  auto *s = static_cast<Stream *>(stream);
  if (s && s->capturing) {
    if (fn->param_sizes.empty()) return kInvalidImage;  // no parameter sizes to copy
    for (size_t i = 0; i < fn->param_sizes.size(); ++i) {
      const char *value = static_cast<const char *>(params[i]);
      l.args.emplace_back(value, value + fn->param_sizes[i]);
    }
    s->recorded.push_back(std::move(l));
    return kSuccess;
  }
  log_line(std::string(cooperative ? "cuLaunchCooperativeKernel " : "cuLaunchKernel ") + fn->name);
  return run(l, params);
}

bool capture_in_progress() { return capturing_streams > 0; }

}  // namespace

extern "C" {

CUresult cuInit(unsigned flags) {
  if (flags != 0) return kInvalidValue;
  state().initialized = true;
  return kSuccess;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
  for (const ErrorText &e : kErrors)
    if (e.code == error) {
      *name = e.name;
      return kSuccess;
    }
  *name = nullptr;
  return kInvalidValue;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  for (const ErrorText &e : kErrors)
    if (e.code == error) {
      *text = e.text;
      return kSuccess;
    }
  *text = nullptr;
  return kInvalidValue;
}

CUresult cuDeviceGetCount(int *count) {
  if (!state().initialized) return kNotInitialized;
  *count = int(env_number("GROVE_FAKE_CUDA_DEVICES", 1));
  return kSuccess;
}

CUresult cuDeviceGet(int *device, int ordinal) {
  if (ordinal < 0 || ordinal >= env_number("GROVE_FAKE_CUDA_DEVICES", 1)) return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

CUresult cuDeviceGetName(char *name, int length, int) {
  std::snprintf(name, size_t(length), "%s", "NVIDIA H200 (grove fake driver)");
  return kSuccess;
}

CUresult cuDeviceGetAttribute(int *value, int attribute, int) {
  switch (attribute) {
    case 16:  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
      *value = int(env_number("GROVE_FAKE_CUDA_SMS", 132));
      return kSuccess;
    case 75:  // COMPUTE_CAPABILITY_MAJOR
      *value = 9;
      return kSuccess;
    case 76:  // COMPUTE_CAPABILITY_MINOR
      *value = 0;
      return kSuccess;
    case 95:  // COOPERATIVE_LAUNCH
      *value = env_number("GROVE_FAKE_CUDA_COOPERATIVE", 1) != 0;
      return kSuccess;
    case 97:  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
      *value = kSharedOptin;
      return kSuccess;
    default:
      return kInvalidValue;
  }
}

CUresult cuDevicePrimaryCtxRetain(void **context, int) {
  *context = &state().context;
  return kSuccess;
}
CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }
CUresult cuCtxSetCurrent(void *) { return kSuccess; }
CUresult cuCtxSynchronize() { return capture_in_progress() ? kCaptureUnsupported : kSuccess; }

CUresult cuModuleLoadData(void **module, const void *image) {
  const auto *bytes = static_cast<const unsigned char *>(image);
  if (!bytes) return kInvalidImage;
  const bool cubin = std::memcmp(bytes, ELFMAG, SELFMAG) == 0;
  const char *text = static_cast<const char *>(image);
  const bool ptx = !cubin && std::strstr(text, ".version") && std::strstr(text, ".target");
  if (!cubin && !ptx) return kInvalidImage;
  log_line(cubin ? "cuModuleLoadData cubin" : "cuModuleLoadData ptx");
  const char *path = std::getenv("GROVE_FAKE_CUDA_KERNELS");
  if (!path || !*path) {
    std::fprintf(stderr, "grove fake CUDA driver: $GROVE_FAKE_CUDA_KERNELS names no host build\n");
    return kInvalidImage;
  }
  auto m = std::make_unique<Module>();
  m->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!m->library) {
    std::fprintf(stderr, "grove fake CUDA driver: %s\n", dlerror());
    return kInvalidImage;
  }
  m->params = cubin ? kernel_params(bytes) : ptx_kernel_params(text);
  *module = m.release();
  return kSuccess;
}

CUresult cuModuleUnload(void *module) {
  auto *m = static_cast<Module *>(module);
  if (!m) return kInvalidHandle;
  dlclose(m->library);
  delete m;
  return kSuccess;
}

CUresult cuModuleGetFunction(void **function, void *module, const char *name) {
  auto *m = static_cast<Module *>(module);
  if (!m) return kInvalidHandle;
  auto it = m->params.find(name);
  void *entry = dlsym(m->library, (std::string("grove_host_") + name).c_str());
  if (it == m->params.end() || !entry) return kNotFound;
  auto f = std::make_unique<Function>();
  f->name = name;
  f->run = reinterpret_cast<HostLaunch>(entry);
  f->param_sizes = it->second;
  *function = f.get();
  m->functions[name] = std::move(f);
  return kSuccess;
}

CUresult cuFuncSetAttribute(void *function, int attribute, int value) {
  auto *f = static_cast<Function *>(function);
  if (!f) return kInvalidHandle;
  if (attribute != 8 || value < 0 || value > kSharedOptin) return kInvalidValue;  // MAX_DYNAMIC_SHARED_SIZE
  f->max_dynamic_shared = value;
  return kSuccess;
}

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int *blocks, void *function, int threads,
                                                     size_t shared) {
  if (!function || threads <= 0) return kInvalidValue;
  *blocks = blocks_per_sm(threads, shared);
  return kSuccess;
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, void *stream, void **params, void **extra) {
  if (extra) return kInvalidValue;
  return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, false);
}

CUresult cuLaunchCooperativeKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                   unsigned bz, unsigned shared, void *stream, void **params) {
  return launch(f, gx, gy, gz, bx, by, bz, shared, stream, params, true);
}

CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
  if (bytes == 0) return kInvalidValue;
  if (capture_in_progress()) return kCaptureUnsupported;
  State &s = state();
  std::lock_guard guard(s.lock);
  const int64_t limit = env_number("GROVE_FAKE_CUDA_MEMORY", 0);
  if (limit > 0 && s.bytes_in_use + int64_t(bytes) > limit) return kOutOfMemory;
  void *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) return kOutOfMemory;
  *ptr = reinterpret_cast<CUdeviceptr>(p);
  s.allocations[*ptr] = bytes;
  s.bytes_in_use += int64_t(bytes);
  return kSuccess;
}

CUresult cuMemFree_v2(CUdeviceptr ptr) {
  State &s = state();
  std::lock_guard guard(s.lock);
  auto it = s.allocations.find(ptr);
  if (it == s.allocations.end()) return kInvalidValue;
  s.bytes_in_use -= int64_t(it->second);
  s.allocations.erase(it);
  std::free(reinterpret_cast<void *>(ptr));
  return kSuccess;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t bytes) {
  if (capture_in_progress()) return kCaptureUnsupported;
  std::memcpy(reinterpret_cast<void *>(dst), src, bytes);
  return kSuccess;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t bytes) {
  if (capture_in_progress()) return kCaptureUnsupported;
  std::memcpy(dst, reinterpret_cast<const void *>(src), bytes);
  return kSuccess;
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned value, size_t count) {
  if (capture_in_progress()) return kCaptureUnsupported;
  std::fill_n(reinterpret_cast<unsigned *>(dst), count, value);
  return kSuccess;
}

CUresult cuStreamCreate(void **stream, unsigned) {
  *stream = new Stream;
  return kSuccess;
}

CUresult cuStreamDestroy_v2(void *stream) {
  if (!stream) return kInvalidHandle;
  delete static_cast<Stream *>(stream);
  return kSuccess;
}

CUresult cuStreamSynchronize(void *stream) {
  auto *s = static_cast<Stream *>(stream);
  return s && s->capturing ? kCaptureUnsupported : kSuccess;
}

CUresult cuStreamBeginCapture_v2(void *stream, int mode) {
  auto *s = static_cast<Stream *>(stream);
  if (!s || s->capturing || mode < 0 || mode > 2) return kInvalidValue;
  s->capturing = true;
  s->recorded.clear();
  capturing_streams++;
  return kSuccess;
}

CUresult cuStreamEndCapture(void *stream, void **graph) {
  auto *s = static_cast<Stream *>(stream);
  if (!s || !s->capturing) return kInvalidValue;
  s->capturing = false;
  capturing_streams--;
  *graph = new Graph{std::move(s->recorded)};
  s->recorded.clear();
  {
    std::lock_guard guard(state().lock);
    state().captures++;
  }
  log_line("cuStreamEndCapture " + std::to_string(static_cast<Graph *>(*graph)->launches.size()) +
           " launches");
  return kSuccess;
}

CUresult cuGraphInstantiateWithFlags(void **exec, void *graph, unsigned long long) {
  if (!graph) return kInvalidHandle;
  *exec = new Graph(*static_cast<Graph *>(graph));
  return kSuccess;
}

CUresult cuGraphLaunch(void *exec, void *stream) {
  auto *g = static_cast<Graph *>(exec);
  auto *s = static_cast<Stream *>(stream);
  if (!g) return kInvalidHandle;
  if (s && s->capturing) return kCaptureUnsupported;
  {
    std::lock_guard guard(state().lock);
    state().graph_launches++;
  }
  log_line("cuGraphLaunch " + std::to_string(g->launches.size()) + " launches");
  for (Launch &l : g->launches) {
    std::vector<void *> argv;
    for (std::vector<char> &a : l.args) argv.push_back(a.data());
    run(l, argv.data());
  }
  return kSuccess;
}

CUresult cuGraphExecDestroy(void *exec) {
  delete static_cast<Graph *>(exec);
  return kSuccess;
}

CUresult cuGraphDestroy(void *graph) {
  delete static_cast<Graph *>(graph);
  return kSuccess;
}

// Not a driver function: what the fake counted so far, for tests that load it in their process.
void grove_fake_cuda_counts(int *captures, int *graph_launches, long long *bytes_in_use) {
  State &s = state();
  std::lock_guard guard(s.lock);
  if (captures) *captures = s.captures;
  if (graph_launches) *graph_launches = s.graph_launches;
  if (bytes_in_use) *bytes_in_use = s.bytes_in_use;
}

}  // extern "C"
