#include "backends/cpu/Aot.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <climits>
#include <filesystem>
#include <vector>

#include "backends/aot/LibraryWriter.h"
#include "backends/cpu/Abi.h"
#include "backends/cpu/Messages.h"
#include "backends/cpu/TsanParallel.h"
#include "lowering/cpu/Codegen.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove::cpu {

namespace fs = std::filesystem;
namespace msg = cpu_messages;

namespace {

using aot::c_string_literal;
using aot::read_file;
using aot::write_file;

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
  aot::check_weights_fit(program, sizes, read_safetensors_bytes(bytes, where), where);
  return bytes.size();
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
  // A bf16 library's three variants, AMX, vdpbf16ps and fp32: the runtime says which this process
  // runs (grove_bf16_library_variant, backends/runtime/CpuFeatures.h), as bf16_support does for the JIT.
  GROVE_CHECK(variants.size() == 3, "a library of {} variants", variants.size());
  return s + fmt::format(
                 "extern int grove_bf16_library_variant(void);\n\n"
                 "const grove_compiled_model *{}_grove_model(void) {{\n"
                 "  static const grove_compiled_model *const variants[] = {{&descriptor0, &descriptor1, "
                 "&descriptor2}};\n"
                 "  return variants[grove_bf16_library_variant()];\n"
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

// The weights file is found through the assembler's include path (-Wa,-I), so that its name needs
// no quoting here.
std::string weights_assembly(const std::string &name) {
  return "# Written by `grove compile`: the embedded weights, a safetensors image.\n" +
         aot::incbin_assembly(".rodata", name + "_grove_weights", "weights.safetensors");
}

std::string header_source(const std::string &name, const ModelAbi &abi, bool embedded,
                          const Toolchain &toolchain) {
  return fmt::format(
             "/* lib{name}: model {model} ('structure {structure}') compiled ahead of time by `grove "
             "compile`.\n"
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
             " * Static library: cc app.c -I{include} lib{name}.a -L{lib} -lgrove_runtime -Wl,-rpath,{lib} "
             "\\\n"
             " *   -lpthread -ldl -lm\n"
             " * Shared library: cc app.c -I{include} -L. -l{name} -L{lib} -lgrove_runtime\n"
             " *\n"
             " * Its parameters (float32, row-major):\n"
             "{params}"
             " */\n",
             fmt::arg("name", name), fmt::arg("model", abi.model), fmt::arg("structure", abi.structure),
             fmt::arg("target", abi.target), fmt::arg("sizes", aot::header_sizes(abi)),
             fmt::arg("schedule", abi.schedule), fmt::arg("weights", aot::header_weights(embedded)),
             fmt::arg("run", abi.runs_dags() ? "dags" : "trees"), fmt::arg("include", toolchain.include_dir),
             fmt::arg("lib", toolchain.runtime_dir), fmt::arg("params", aot::header_params(abi))) +
         aot::header_declarations(name);
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
  const std::string name = aot::library_name(aot.name, program.name);
  const fs::path out_dir = aot::prepare_out_dir(aot.out_dir);
  const Toolchain toolchain = find_toolchain(aot);
  aot::LibraryWriter writer(name, out_dir);
  const uint64_t weights_size = write_embedded_weights(program, sizes, aot, writer / "weights.safetensors");

  // 2. With bf16 kernels, one variant per kernel (AMX, then vdpbf16ps), whatever this CPU is, and an
  // fp32 one (carrying the runtime they all use).
  CompileOptions amx = options;
  amx.bf16_kernel = GemmKernel::AmxBf16;
  LoweredForCpu lowered = lower_for_cpu(program, sizes, amx);
  std::vector<ModelAbi> variants{lowered.abi};
  std::vector<std::string> objects;
  if (lowered.abi.bf16_panels()) {
    variants.clear();
    for (auto [kernel, function] : {std::pair{GemmKernel::AmxBf16, "grove_model_amx"},
                                    std::pair{GemmKernel::Vdpbf16ps, "grove_model_bf16"}}) {
      CompileOptions o = options;
      o.bf16_kernel = kernel;
      LoweredForCpu v = lower_for_cpu(program, sizes, o, false, function, /*runtime=*/false);
      variants.push_back(v.abi);
      objects.push_back((writer / fmt::format("{}.o", function)).string());
      lowering::write_code(v.lowered, Halide::OutputFileType::object, objects.back());
    }
    CompileOptions fp32 = options;
    fp32.schedule += ",precision=fp32";
    LoweredForCpu fallback = lower_for_cpu(program, sizes, fp32);
    variants.push_back(fallback.abi);
    objects.push_back((writer / "model.o").string());
    lowering::write_code(fallback.lowered, Halide::OutputFileType::object, objects.back());
  } else {
    objects.push_back((writer / "model.o").string());
    lowering::write_code(lowered.lowered, Halide::OutputFileType::object, objects.back());
  }

  // 3. Instrumented code (Halide's tsan feature) needs ThreadSanitizer's runtime. Its parallel loops,
  // and in a GROVE_TSAN build those of any library (one for an explicit target is not instrumented,
  // but Halide's pool would still read as races), run on threads TSan sees.
  const bool tsan = lowered.lowered.module.target().has_feature(Halide::Target::TSAN);
  std::vector<std::string> descriptor_flags{"-I" + toolchain.include_dir};
  if (tsan) descriptor_flags.push_back("-fsanitize=thread");
  objects.push_back(writer.compile_c(
      "descriptor",
      descriptor_source(name, variants, weights_size) + (tsan || kTsanBuild ? tsan_parallel_source() : ""),
      descriptor_flags, "the model's descriptor"));
  if (weights_size > 0)
    objects.push_back(writer.assemble("weights", weights_assembly(name), "the embedded weights"));
  writer.compile_entry({"-I" + toolchain.include_dir});

  // 4.
  std::vector<std::string> libraries{"-L" + toolchain.runtime_dir,
                                     "-lgrove_runtime",
                                     "-Wl,-rpath," + toolchain.runtime_dir,
                                     "-lpthread",
                                     "-ldl",
                                     "-lm"};
  if (tsan) libraries.push_back("-fsanitize=thread");
  writer.link_shared(objects, libraries);

  // 5.
  writer.link_static(objects);

  // 6.
  writer.write_header(header_source(name, lowered.abi, weights_size > 0, toolchain));
  AotResult result;
  result.name = name;
  result.notes = lowered.notes(program.structure);
  const aot::LibraryFiles files = writer.move_into_place();
  result.shared_library = files.shared_library;
  result.static_library = files.static_library;
  result.header = files.header;
  return result;
}

}  // namespace grove::cpu
