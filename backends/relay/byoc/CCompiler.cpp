// The ccompiler code generator (CCompiler.h): its target, and building, loading and calling the C
// source CSourceEmitter.cpp writes; saving a built library and loading it back (SavedProgram.h).

#include "backends/relay/byoc/CCompiler.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "backends/relay/byoc/CSourceEmitter.h"
#include "backends/relay/byoc/Codegen.h"
#include "backends/runtime/SharedObject.h"
#include "support/Error.h"

namespace grove::relay {
namespace {

using EntryFn = int (*)(const float *const *inputs, float *const *outputs);
using InitFn = int (*)(const float *const *constants);

bool float32_known(const Type &type) {
  const auto *t = type.as<TensorType>();
  if (!t || t->dtype != DType::Float32) return false;
  for (int64_t d : t->shape)
    if (d < 0) return false;
  return true;
}

// A call the emitter compiles: a float32 tensor of known shape in, and out.
bool supports_call(const Call &call) {
  if (!float32_known(call.checked_type)) return false;
  for (const Expr &a : call.args)
    if (!float32_known(a->checked_type)) return false;
  return true;
}

constexpr char kWho[] = "the ccompiler code generator";

std::string read_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof())
    user_error("the ccompiler code generator could not read {}: {}", path, std::strerror(errno));
  return bytes;
}

// A built library: loaded, and its file's bytes kept for saving (a few kilobytes).
struct BuiltLibrary {
  Library library;
  std::string bytes;
};

// Loads a library from its bytes: written to a fresh private directory and dlopen-ed there, so that
// a saved file loaded twice (two programs from one directory) gives two libraries, each with its own
// constants, and later changes to the saved file cannot reach a loaded kernel. `what` names the
// bytes' origin for the error message.
Library load_private(const std::string &bytes, const std::string &what) {
  TempDir dir("grove-ccompiler", kWho);
  const std::string so_path = dir.path() + "/kernel.so";
  {
    std::ofstream out(so_path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out.flush())
      user_error("the ccompiler code generator could not write {}: {}", so_path, std::strerror(errno));
  }
  Library library(dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library) user_error("the ccompiler code generator could not load {}: {}", what, dlerror());
  return library;
}

// Builds `source` into a shared object and loads it:
//   1. write the text to kernel.c in a fresh private directory;
//   2. run `$CC -O2 -shared -fPIC -ffp-contract=off` on it (no contraction into fused multiply-adds:
//      the interpreter rounds every op), its output captured for the error message;
//   3. dlopen the result (RTLD_LOCAL: kernels of the same symbol at other shapes stay apart), and
//      keep its bytes for save_ccompiler_kernel;
//   4. remove the directory.
BuiltLibrary build(const CSource &source) {
  TempDir dir("grove-ccompiler", kWho);
  const std::string c_path = dir.path() + "/kernel.c", so_path = dir.path() + "/kernel.so";
  write_text_file(c_path, source.text, kWho);
  const char *cc_env = std::getenv("CC");
  const std::string cc = cc_env && *cc_env ? cc_env : "cc";
  const std::string command = fmt::format("{} -O2 -shared -fPIC -ffp-contract=off -o {} {} -lm 2>&1", cc,
                                          shell_quote(so_path), shell_quote(c_path));
  const CommandResult built = run_command(command, kWho);
  if (built.exit_code != 0) {
    const int code = built.exit_code;
    user_error("the ccompiler code generator could not build {}: `{}` failed ({}):\n{}", source.symbol,
               command,
               code == 127 ? "no such C compiler: install one, or name it in $CC"
                           : fmt::format("exit status {}", code),
               built.output);
  }
  Library library(dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL));
  if (!library) user_error("the ccompiler code generator could not load {}: {}", so_path, dlerror());
  return {std::move(library), read_bytes(so_path)};
}

// The address of `name` in a library: one just built from the source has every symbol it defines;
// a saved one (`origin` its file) that lacks one was not built from this function.
void *symbol(const Library &library, const std::string &name, const std::string &origin) {
  void *address = dlsym(library.get(), name.c_str());
  if (address == nullptr && !origin.empty())
    user_error("the ccompiler library {} has no symbol {}: it was not built from this function", origin,
               name);
  GROVE_CHECK(address != nullptr, "the compiled C source has no symbol {}", name);
  return address;
}

class LoadedKernel : public CCompilerKernel {
 public:
  // Built from the source now.
  LoadedKernel(CSource source, std::vector<Shape> input_shapes)
      : source_(std::move(source)), input_shapes_(std::move(input_shapes)) {
    BuiltLibrary built = build(source_);
    library_ = std::move(built.library);
    bytes_ = std::move(built.bytes);
    initialize("");
  }
  // Loaded from a library saved from a kernel of the same source (`origin`: its file).
  LoadedKernel(CSource source, std::vector<Shape> input_shapes, std::string bytes, const std::string &origin)
      : source_(std::move(source)), input_shapes_(std::move(input_shapes)), bytes_(std::move(bytes)) {
    library_ = load_private(bytes_, origin);
    initialize(origin);
  }

  const std::string &library_bytes() const { return bytes_; }

 private:
  void initialize(const std::string &origin) {
    entry_ = reinterpret_cast<EntryFn>(symbol(library_, source_.symbol, origin));
    if (!source_.init_symbol.empty()) {
      // The constants stay alive in source_: the library keeps pointers to them.
      std::vector<const float *> constants;
      for (const NDArray &c : source_.constants) constants.push_back(c.data<float>());
      const int status =
          reinterpret_cast<InitFn>(symbol(library_, source_.init_symbol, origin))(constants.data());
      GROVE_CHECK(status == 0, "{} returned {}", source_.init_symbol, status);
    }
  }

 public:
  std::vector<NDArray> run(const std::vector<NDArray> &inputs) override {
    if (inputs.size() != input_shapes_.size())
      user_error("the ccompiler kernel {} takes {} inputs, found {}", source_.symbol, input_shapes_.size(),
                 inputs.size());
    std::vector<const float *> in;
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].dtype() != DType::Float32 || inputs[i].shape() != input_shapes_[i])
        user_error(
            "the ccompiler kernel {} was compiled for a float32 input {} of shape {}, found {} of shape {}",
            source_.symbol, i, shape_to_string(input_shapes_[i]), to_string(inputs[i].dtype()),
            shape_to_string(inputs[i].shape()));
      in.push_back(inputs[i].data<float>());
    }
    std::vector<NDArray> outputs;
    std::vector<float *> out;
    for (const Shape &s : source_.output_shapes) outputs.emplace_back(DType::Float32, s);
    for (NDArray &o : outputs) out.push_back(o.data<float>());
    if (entry_(in.data(), out.data()) != 0)
      user_error("the ccompiler kernel {} could not allocate its workspace", source_.symbol);
    return outputs;
  }

  std::string describe() const override {
    return fmt::format("ccompiler: {} ({} ops)", source_.symbol, source_.num_ops);
  }

  const std::string &source() const override { return source_.text; }

 private:
  CSource source_;
  std::vector<Shape> input_shapes_;
  std::string bytes_;  // the library's file, for save_ccompiler_kernel
  Library library_;
  EntryFn entry_ = nullptr;
};

class CCompilerKernelCompiler : public KernelCompiler {
 public:
  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    if (!primitive.as<Function>())
      user_error("the ccompiler code generator compiles functions, found a {} (at {})",
                 to_string(primitive->kind), to_string(primitive->span));
    for (size_t i = 0; i < dtypes.size(); ++i)
      if (dtypes[i] != DType::Float32)
        return KernelResult::unsupported(
            fmt::format("the ccompiler code generator computes float32 only; input {} is {} (at {})", i,
                        to_string(dtypes[i]), to_string(primitive->span)));
    Key key{primitive.get(), shapes};
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = cache_.find(key); it != cache_.end()) return KernelResult::compiled(it->second.second);
    std::shared_ptr<LoadedKernel> kernel;
    try {
      kernel = std::make_shared<LoadedKernel>(emit_c_source(primitive, shapes), shapes);
    } catch (const CSourceUnsupported &why) {
      return KernelResult::unsupported(why.what());
    }
    cache_.emplace(key, std::make_pair(primitive, kernel));
    return KernelResult::compiled(kernel);
  }

  std::string name() const override { return "ccompiler"; }

 private:
  using Key = std::pair<const ExprNode *, std::vector<Shape>>;
  std::mutex mutex_;
  // The function is held so that its node (the key) outlives the entry.
  std::map<Key, std::pair<Expr, std::shared_ptr<Kernel>>> cache_;
};

}  // namespace

ExternalTarget ccompiler_target() {
  ExternalTarget target;
  target.name = "ccompiler";
  for (const std::string &op : c_source_ops()) target.ops[op] = supports_call;
  return target;
}

std::unique_ptr<KernelCompiler> make_ccompiler_kernel_compiler() {
  return std::make_unique<CCompilerKernelCompiler>();
}

namespace {

void save_ccompiler_kernel(const Kernel &kernel, const std::string &path) {
  const auto *loaded = dynamic_cast<const LoadedKernel *>(&kernel);
  GROVE_CHECK(loaded != nullptr, "save_ccompiler_kernel: {} is not a ccompiler kernel", kernel.describe());
  std::ofstream out(path, std::ios::binary);
  out.write(loaded->library_bytes().data(), static_cast<std::streamsize>(loaded->library_bytes().size()));
  if (!out.flush())
    user_error("the ccompiler code generator could not write {}: {}", path, std::strerror(errno));
}

// The source is emitted again (no compiler runs) for the symbols, the constants handed to init and
// the output shapes; the library is the saved one.
std::shared_ptr<Kernel> load_ccompiler_kernel(const Expr &function, const std::vector<Shape> &shapes,
                                              const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) user_error("the ccompiler library {} is missing", path);
  try {
    return std::make_shared<LoadedKernel>(emit_c_source(function, shapes), shapes, read_bytes(path), path);
  } catch (const CSourceUnsupported &why) {
    user_error("the ccompiler library {} was saved for a function the code generator cannot compile: {}",
               path, why.what());
  }
}

}  // namespace

Codegen ccompiler_codegen() {
  return {"ccompiler",
          "C source for float32 elementwise regions, built by the system C compiler ($CC, else cc)",
          ccompiler_target,
          make_ccompiler_kernel_compiler,
          save_ccompiler_kernel,
          load_ccompiler_kernel,
          ".so"};
}

}  // namespace grove::relay
