#include "backends/cpu/Aot.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "backends/cpu/Abi.h"
#include "backends/cpu/Messages.h"
#include "backends/cpu/TsanParallel.h"
#include "backends/runtime/BindWeights.h"
#include "lowering/cpu/Codegen.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove::cpu {

namespace fs = std::filesystem;
namespace msg = cpu_messages;

namespace {

bool is_identifier(const std::string &s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  return true;
}

std::string lower(std::string s) {
  for (char &c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// One byte as it stands in a C (or GNU assembler) string literal: quotes, backslashes, question
// marks (trigraphs) and every byte outside printable ASCII escaped, the latter as three octal digits
// so that a following digit cannot extend the escape.
std::string c_escape(unsigned char c) {
  if (c == '"' || c == '\\' || c == '?') return std::string{'\\', char(c)};
  if (c < 0x20 || c > 0x7e) return fmt::format("\\{:03o}", c);
  return std::string(1, char(c));
}

// A C string literal of `text`, as adjacent literals of about 100 characters, one per line.
std::string c_string_literal(const std::string &text) {
  std::vector<std::string> lines{""};
  for (unsigned char c : text) {
    if (lines.back().size() >= 100) lines.emplace_back();
    lines.back() += c_escape(c);
  }
  std::string out;
  for (const std::string &line : lines) out += fmt::format("{}    \"{}\"", out.empty() ? "" : "\n", line);
  return out;
}

std::string shell_quote(const std::string &s) {
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string tool(const char *variable, const char *fallback) {
  const char *value = std::getenv(variable);
  return value && *value ? value : fallback;
}

// Runs `program args...` through the shell (so that $CC may carry options, "ccache gcc"), its output
// captured for the error message, which names what was being built.
void run_tool(const std::string &program, const char *variable, const std::vector<std::string> &args,
              const std::string &what) {
  std::string command = program;
  for (const std::string &a : args) command += " " + shell_quote(a);
  FILE *pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) user_error(msg::kAotTool, what, command, std::strerror(errno), "");
  std::string output;
  char chunk[4096];
  for (size_t n; (n = std::fread(chunk, 1, sizeof(chunk), pipe)) > 0;) output.append(chunk, n);
  const int status = pclose(pipe);
  if (status == 0) return;
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  user_error(msg::kAotTool, what, command,
             code == 127 ? fmt::format(msg::kAotNoTool, variable) : fmt::format("exit status {}", code),
             output);
}

void write_file(const fs::path &path, const std::string &text) {
  std::ofstream out(path, std::ios::binary);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!out.flush()) user_error(msg::kAotWrite, path.string(), std::strerror(errno));
}

std::string read_file(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) user_error(msg::kAotRead, path, std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) user_error(msg::kAotRead, path, std::strerror(errno));
  return bytes;
}

// A private directory inside out_dir (so that the results are renamed, not copied, into place),
// removed with what is left in it when this goes.
class TempDir {
 public:
  explicit TempDir(const fs::path &parent) {
    std::string pattern = (parent / ".grove-compile-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!mkdtemp(buffer.data())) user_error(msg::kAotTempDir, parent.string(), std::strerror(errno));
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  fs::path operator/(const std::string &name) const { return path_ / name; }
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

// Directories whose parent may be an install prefix (bin/ or lib/ next to lib/ and include/): that of
// this code's own file (the grove program, or libgrove_compiler.so), that of a libgrove_runtime.so
// the process has loaded, and that of the running program.
std::vector<fs::path> install_prefixes() {
  std::vector<fs::path> dirs;
  std::error_code ec;
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&compile_library), &info) && info.dli_fname && *info.dli_fname) {
    fs::path self = fs::canonical(info.dli_fname, ec);
    if (!ec) dirs.push_back(self.parent_path());
  }
  if (void *runtime = dlopen("libgrove_runtime.so.1", RTLD_LAZY | RTLD_NOLOAD)) {
    char origin[PATH_MAX] = {};
    if (dlinfo(runtime, RTLD_DI_ORIGIN, origin) == 0) dirs.push_back(origin);
    dlclose(runtime);
  }
  fs::path exe = fs::canonical("/proc/self/exe", ec);
  if (!ec) dirs.push_back(exe.parent_path());
  return dirs;
}

struct Toolchain {
  std::string runtime_dir, include_dir;
};

// Where libgrove_runtime.so and grove/grove.h are: where the options say, else installed next to
// the running program, else grove's build and source trees (compiled in).
Toolchain find_toolchain(const AotOptions &aot) {
  Toolchain t;
  std::vector<fs::path> lib_dirs, include_dirs;
  const std::vector<fs::path> prefixes = install_prefixes();
  if (!aot.runtime_dir.empty()) {
    lib_dirs.push_back(aot.runtime_dir);
  } else {
    for (const fs::path &dir : prefixes) {
      lib_dirs.push_back(dir.parent_path() / "lib");
      lib_dirs.push_back(dir);
    }
#ifdef GROVE_BUILD_RUNTIME_DIR
    lib_dirs.push_back(GROVE_BUILD_RUNTIME_DIR);
#endif
  }
  if (!aot.include_dir.empty()) {
    include_dirs.push_back(aot.include_dir);
  } else {
    for (const fs::path &dir : prefixes) include_dirs.push_back(dir.parent_path() / "include");
#ifdef GROVE_SOURCE_INCLUDE_DIR
    include_dirs.push_back(GROVE_SOURCE_INCLUDE_DIR);
#endif
  }
  // The first directory that holds `file`, else every directory looked in.
  auto find = [](const std::vector<fs::path> &dirs, const std::string &file, std::string &found) {
    std::error_code ec;
    std::vector<std::string> looked;
    for (const fs::path &dir : dirs) {
      if (fs::exists(dir / file, ec)) {
        found = fs::absolute(dir, ec).lexically_normal().string();
        return std::string();
      }
      looked.push_back(dir.lexically_normal().string());
    }
    return fmt::format("{}", fmt::join(looked, ", "));
  };
  if (std::string looked = find(lib_dirs, "libgrove_runtime.so", t.runtime_dir); !looked.empty())
    user_error(msg::kAotNoRuntime, looked);
  if (std::string looked = find(include_dirs, "grove/grove.h", t.include_dir); !looked.empty())
    user_error(msg::kAotNoInclude, looked);
  return t;
}

// Writes the weights to embed, a safetensors image, to `image` and checks them against the model at
// `sizes`. Returns the image's size; 0 when nothing is embedded.
uint64_t write_embedded_weights(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                                const AotOptions &aot, const fs::path &image) {
  if (!aot.embed_weights_file.empty() && aot.embed_weights) user_error(msg::kAotTwoWeights);
  std::string where;
  if (!aot.embed_weights_file.empty()) {
    where = aot.embed_weights_file;
    write_file(image, read_file(where));
  } else if (aot.embed_weights) {
    where = "the embedded weights";
    write_safetensors(image.string(), *aot.embed_weights);
  } else {
    return 0;
  }
  const std::string bytes = read_file(image.string());
  Weights weights = read_safetensors_bytes(bytes, where);
  for (const auto &[var, value] : bind_weights(program, weights, where)) {
    auto it = sizes.find(var);
    if (it != sizes.end() && it->second != value)
      user_error(msg::kAotWeightsSizes, where, var, value, var, it->second);
  }
  return bytes.size();
}

std::string join_shape(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

// The C source of the descriptor: the ABI as JSON, the entry points, the embedded weights (an
// assembler file's symbol) and the static library's accessor.
std::string descriptor_source(const std::string &name, const std::vector<ModelAbi> &variants,
                              uint64_t weights_size) {
  std::string weights = "NULL", weights_decl;
  if (weights_size > 0) {
    weights = fmt::format("{}_grove_weights", name);
    weights_decl = fmt::format("extern const unsigned char {}[];\n", weights);
  }
  std::string s = fmt::format(
      "/* Written by `grove compile`: the descriptor of model {model} (include/grove/grove.h). */\n"
      "#include <grove/grove.h>\n"
      "#include <stddef.h>\n\n"
      "/* The thread-pool setting of the Halide runtime in the model's object. */\n"
      "extern int halide_set_num_threads(int n);\n"
      "{weights_decl}\n",
      fmt::arg("model", variants[0].model), fmt::arg("weights_decl", weights_decl));
  for (size_t v = 0; v < variants.size(); v++)
    s += fmt::format(
        "/* Halide's argv entry point. */\n"
        "extern int {function}_argv(void **args);\n"
        "static const char abi_json{v}[] =\n{json};\n"
        "static const grove_compiled_model descriptor{v} = {{\n"
        "    {version}, \"{name}\", abi_json{v}, {function}_argv, halide_set_num_threads, {weights}, "
        "{size}u}};\n\n",
        fmt::arg("v", v), fmt::arg("function", variants[v].function),
        fmt::arg("json", c_string_literal(to_json(variants[v]))), fmt::arg("version", kModelAbiVersion),
        fmt::arg("name", name), fmt::arg("weights", weights), fmt::arg("size", weights_size));
  if (variants.size() == 1)
    return s +
           fmt::format("const grove_compiled_model *{}_grove_model(void) {{ return &descriptor0; }}\n", name);
  // A bf16 library's two variants: bf16 where the CPU has AVX512-BF16 (cpuid leaf 7.1, eax bit 5)
  // and no AMX (leaf 7.0, edx bit 22: there vdpbf16ps runs at half the fp32 rate), else fp32; the
  // environment's GROVE_LIBRARY_VARIANT=fp32 forces fp32 (lowering::bf16_support decides the same).
  return s + fmt::format(
                 "#include <cpuid.h>\n"
                 "#include <stdlib.h>\n"
                 "#include <string.h>\n\n"
                 "static int use_bf16(void) {{\n"
                 "  const char *forced = getenv(\"GROVE_LIBRARY_VARIANT\");\n"
                 "  if (forced && strcmp(forced, \"fp32\") == 0) return 0;\n"
                 "  unsigned a, b, c, d;\n"
                 "  if (__get_cpuid_max(0, NULL) < 7) return 0;\n"
                 "  __cpuid_count(7, 0, a, b, c, d);\n"
                 "  const int amx_bf16 = (d >> 22) & 1;\n"
                 "  __cpuid_count(7, 1, a, b, c, d);\n"
                 "  return ((a >> 5) & 1) && !amx_bf16;\n"
                 "}}\n\n"
                 "const grove_compiled_model *{}_grove_model(void) {{\n"
                 "  return use_bf16() ? &descriptor0 : &descriptor1;\n"
                 "}}\n",
                 name);
}

// For ThreadSanitizer (TsanParallel.h): the library's Halide runtime runs its parallel loops on
// pthreads TSan sees, set before the library's code can run (a constructor), as a GROVE_TSAN build
// runs the JIT's: a loop of n tasks on min(n, max(16, cores)) threads at once, the caller one of
// them, tasks that many apart, all joined before it returns.
std::string tsan_parallel_source() {
  return R"(
/* ThreadSanitizer: the runtime's parallel loops on pthreads (a target with the tsan feature). */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

typedef int (*grove_tsan_task)(void *, int, unsigned char *);
typedef int (*grove_tsan_par_for)(void *, grove_tsan_task, int, int, unsigned char *);
extern grove_tsan_par_for halide_set_custom_do_par_for(grove_tsan_par_for);

struct grove_tsan_part {
    grove_tsan_task task;
    void *user_context;
    unsigned char *closure;
    int first, end, stride, status, started;
    pthread_t thread;
};

static void *grove_tsan_run(void *arg) {
    struct grove_tsan_part *p = (struct grove_tsan_part *)arg;
    for (int i = p->first; i < p->end; i += p->stride) {
        int s = p->task(p->user_context, i, p->closure);
        if (s && !p->status) p->status = s;
    }
    return NULL;
}

static int grove_tsan_do_par_for(void *user_context, grove_tsan_task task, int min, int extent,
                                 unsigned char *closure) {
    if (extent <= 0) return 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int limit = cores > 16 ? (int)cores : 16, n = extent < limit ? extent : limit, status = 0;
    struct grove_tsan_part *parts = (struct grove_tsan_part *)calloc((size_t)n, sizeof *parts);
    if (!parts) return -1;
    for (int k = 0; k < n; k++) {
        struct grove_tsan_part part = {task, user_context, closure, min + k, min + extent, n, 0, 0, 0};
        parts[k] = part;
    }
    for (int k = 1; k < n; k++)
        parts[k].started = pthread_create(&parts[k].thread, NULL, grove_tsan_run, &parts[k]) == 0;
    grove_tsan_run(&parts[0]);
    for (int k = 1; k < n; k++) {
        if (parts[k].started) pthread_join(parts[k].thread, NULL);
        else grove_tsan_run(&parts[k]);
        if (parts[k].status && !parts[0].status) parts[0].status = parts[k].status;
    }
    status = parts[0].status;
    free(parts);
    return status;
}

__attribute__((constructor)) static void grove_tsan_route(void) {
    halide_set_custom_do_par_for(grove_tsan_do_par_for);
}
)";
}

// The shared library's one entry point, kept out of the static library so that two models linked
// into one program do not both define it.
std::string entry_source(const std::string &name) {
  return fmt::format(
      "/* Written by `grove compile`: what grove_model_open looks up in lib{0}.so. */\n"
      "#include <grove/grove.h>\n\n"
      "const grove_compiled_model *{0}_grove_model(void);\n"
      "const grove_compiled_model *grove_compiled_model_entry(void) {{ return {0}_grove_model(); }}\n",
      name);
}

// The weights file is found through the assembler's include path (-Wa,-I), so that its name needs
// no quoting here.
std::string weights_assembly(const std::string &name) {
  return fmt::format(
      "# Written by `grove compile`: the embedded weights, a safetensors image.\n"
      "\t.section .rodata\n"
      "\t.balign 64\n"
      "\t.globl {0}_grove_weights\n"
      "\t.hidden {0}_grove_weights\n"
      "{0}_grove_weights:\n"
      "\t.incbin \"weights.safetensors\"\n",
      name);
}

std::string header_source(const std::string &name, const ModelAbi &abi, bool embedded,
                          const Toolchain &toolchain) {
  std::string params;
  for (const ModelAbi::Param &p : abi.params)
    params += fmt::format(" *   {} {}\n", p.name, join_shape(p.shape));
  std::string sizes;
  for (const auto &[var, value] : abi.sizes)
    sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ",", var, value);
  std::string guard = "GROVE_MODEL_" + name + "_H";
  for (char &c : guard) c = char(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format(
      "/* lib{name}: model {model} ('structure {structure}') compiled ahead of time by `grove compile`.\n"
      " *\n"
      " * Target {target}; sizes {sizes}; schedule {schedule}.\n"
      " * {weights}\n"
      " *\n"
      " * Use it through grove's C API (grove/grove.h):\n"
      " *   grove_model *model;\n"
      " *   grove_model_open_compiled({name}_grove_model(), &model);   (or "
      "grove_model_open(\"lib{name}.so\", ...))\n"
      " *   grove_model_bind_weights_file(model, \"weights.safetensors\");\n"
      " *   grove_model_run_{run}(model, ...);\n"
      " *\n"
      " * Static library: cc app.c -I{include} lib{name}.a -L{lib} -lgrove_runtime -Wl,-rpath,{lib} \\\n"
      " *   -lpthread -ldl -lm\n"
      " * Shared library: cc app.c -I{include} -L. -l{name} -L{lib} -lgrove_runtime\n"
      " *\n"
      " * Its parameters (float32, row-major):\n"
      "{params}"
      " */\n"
      "#ifndef {guard}\n"
      "#define {guard}\n\n"
      "#include <grove/grove.h>\n\n"
      "#ifdef __cplusplus\n"
      "extern \"C\" {{\n"
      "#endif\n\n"
      "/* The model's descriptor, for grove_model_open_compiled. */\n"
      "const grove_compiled_model *{name}_grove_model(void);\n\n"
      "#ifdef __cplusplus\n"
      "}}\n"
      "#endif\n\n"
      "#endif /* {guard} */\n",
      fmt::arg("name", name), fmt::arg("model", abi.model), fmt::arg("structure", abi.structure),
      fmt::arg("target", abi.target), fmt::arg("sizes", sizes), fmt::arg("schedule", abi.schedule),
      fmt::arg("weights", embedded ? "The weights are embedded: the model is ready to run when opened."
                                   : "The weights are not embedded: bind them before running the model."),
      fmt::arg("run", abi.runs_dags() ? "dags" : "trees"), fmt::arg("include", toolchain.include_dir),
      fmt::arg("lib", toolchain.runtime_dir), fmt::arg("params", params), fmt::arg("guard", guard));
}

}  // namespace

// 1. Check the name and the output directory, find libgrove_runtime.so and grove.h, and check the
//    weights to embed (copied into a private directory in out_dir), before any slow step.
// 2. Lower the model and compile it with Halide's AOT back end to an object file that carries its
//    own Halide runtime (the target has no NoRuntime feature).
// 3. Write the descriptor's C source (and the weights' assembler file) and compile them.
// 4. Link the shared library against libgrove_runtime.so, exporting only the two accessors: the
//    Halide runtime inside stays private, so it cannot bind to another copy in the process.
// 5. The static library: one relocatable object with every symbol but <name>_grove_model made
//    local (two models, or a model and Halide, then link into one program without clashes).
// 6. Write the header, and rename the three files into place.
AotResult compile_library(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                          const CompileOptions &options, const AotOptions &aot) {
  // 1.
  const std::string name = aot.name.empty() ? lower(program.name) : aot.name;
  if (!is_identifier(name)) user_error(msg::kAotBadName, name);
  const fs::path out_dir = aot.out_dir.empty() ? fs::path(".") : fs::path(aot.out_dir);
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    user_error(msg::kAotOutDirNotDir, out_dir.string());
  if (!fs::exists(out_dir, ec) && !fs::create_directories(out_dir, ec))
    user_error(msg::kAotOutDir, out_dir.string(), ec ? ec.message() : "unknown error");
  const Toolchain toolchain = find_toolchain(aot);
  TempDir tmp(out_dir);
  const uint64_t weights_size = write_embedded_weights(program, sizes, aot, tmp / "weights.safetensors");

  // 2. With bf16 kernels, an fp32 variant too (carrying the runtime both use).
  LoweredForCpu lowered = lower_for_cpu(program, sizes, options);
  std::vector<ModelAbi> variants{lowered.abi};
  std::vector<std::string> objects;
  if (lowered.abi.bf16_panels()) {
    lowered = lower_for_cpu(program, sizes, options, false, "grove_model_bf16", /*runtime=*/false);
    variants = {lowered.abi};
    objects.push_back((tmp / "model_bf16.o").string());
    lowering::write_code(lowered.lowered, Halide::OutputFileType::object, objects.back());
    CompileOptions fp32 = options;
    fp32.schedule += ",precision=fp32";
    LoweredForCpu fallback = lower_for_cpu(program, sizes, fp32);
    variants.push_back(fallback.abi);
    objects.push_back((tmp / "model.o").string());
    lowering::write_code(fallback.lowered, Halide::OutputFileType::object, objects.back());
  } else {
    objects.push_back((tmp / "model.o").string());
    lowering::write_code(lowered.lowered, Halide::OutputFileType::object, objects.back());
  }

  // 3.
  const std::string cc = tool("CC", "cc");
  // Instrumented code (Halide's tsan feature) needs ThreadSanitizer's runtime. Its parallel loops, and
  // in a GROVE_TSAN build those of any library (one for an explicit target is not instrumented, but
  // Halide's pool would still read as races), run on threads TSan sees.
  const bool tsan = lowered.lowered.module.target().has_feature(Halide::Target::TSAN);
  write_file(tmp / "descriptor.c", descriptor_source(name, variants, weights_size) +
                                       (tsan || kTsanBuild ? tsan_parallel_source() : ""));
  std::vector<std::string> descriptor_flags{"-O2", "-fPIC", "-I" + toolchain.include_dir};
  if (tsan) descriptor_flags.push_back("-fsanitize=thread");
  descriptor_flags.insert(descriptor_flags.end(),
                          {"-c", (tmp / "descriptor.c").string(), "-o", (tmp / "descriptor.o").string()});
  run_tool(cc, "CC", descriptor_flags, "the model's descriptor");
  objects.push_back((tmp / "descriptor.o").string());
  if (weights_size > 0) {
    write_file(tmp / "weights.s", weights_assembly(name));
    run_tool(cc, "CC",
             {"-c", "-Wa,--noexecstack", "-Wa,-I" + tmp.path().string(), (tmp / "weights.s").string(), "-o",
              (tmp / "weights.o").string()},
             "the embedded weights");
    objects.push_back((tmp / "weights.o").string());
  }
  write_file(tmp / "entry.c", entry_source(name));
  run_tool(cc, "CC",
           {"-O2", "-fPIC", "-I" + toolchain.include_dir, "-c", (tmp / "entry.c").string(), "-o",
            (tmp / "entry.o").string()},
           "the library's entry point");

  // 4.
  const std::string so_name = "lib" + name + ".so";
  write_file(
      tmp / "exports.map",
      fmt::format("{{\n  global: grove_compiled_model_entry; {}_grove_model;\n  local: *;\n}};\n", name));
  std::vector<std::string> link{"-shared", "-o", (tmp / so_name).string()};
  link.insert(link.end(), objects.begin(), objects.end());
  const std::vector<std::string> rest{(tmp / "entry.o").string(),
                                      "-Wl,--version-script=" + (tmp / "exports.map").string(),
                                      "-Wl,-soname," + so_name,
                                      "-Wl,-z,noexecstack",
                                      "-Wl,--no-undefined",
                                      "-L" + toolchain.runtime_dir,
                                      "-lgrove_runtime",
                                      "-Wl,-rpath," + toolchain.runtime_dir,
                                      "-lpthread",
                                      "-ldl",
                                      "-lm"};
  link.insert(link.end(), rest.begin(), rest.end());
  if (tsan) link.push_back("-fsanitize=thread");
  run_tool(cc, "CC", link, so_name);

  // 5.
  const std::string a_name = "lib" + name + ".a";
  const fs::path combined = tmp / (name + ".o");
  std::vector<std::string> relocatable{"-r", "-nostdlib", "-o", combined.string()};
  relocatable.insert(relocatable.end(), objects.begin(), objects.end());
  run_tool(cc, "CC", relocatable, a_name);
  run_tool(tool("OBJCOPY", "objcopy"), "OBJCOPY",
           {"--keep-global-symbol=" + name + "_grove_model", combined.string()}, a_name);
  run_tool(tool("AR", "ar"), "AR", {"rcs", (tmp / a_name).string(), combined.string()}, a_name);

  // 6.
  const std::string h_name = name + ".h";
  write_file(tmp / h_name, header_source(name, lowered.abi, weights_size > 0, toolchain));
  AotResult result;
  result.name = name;
  result.notes = lowered.notes(program.structure);
  for (const std::string &file : {so_name, a_name, h_name}) {
    const fs::path to = out_dir / file;
    fs::rename(tmp / file, to, ec);
    if (ec) user_error(msg::kAotRename, (tmp / file).string(), to.string(), ec.message());
  }
  result.shared_library = (out_dir / so_name).string();
  result.static_library = (out_dir / a_name).string();
  result.header = (out_dir / h_name).string();
  return result;
}

}  // namespace grove::cpu
