#include "backends/cuda/Aot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <stdlib.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/GroveHeaderText.h"
#include "backends/cuda/KernelArgs.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "backends/runtime/BindWeights.h"
#include "backends/runtime/SharedObject.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove::cuda {

namespace fs = std::filesystem;
namespace msg = cuda_messages;

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

// A C string literal of `text` (printable ASCII kept, the rest as octal escapes), one line per
// 100 characters.
std::string c_string_literal(const std::string &text) {
  std::vector<std::string> lines{""};
  for (unsigned char c : text) {
    if (lines.back().size() >= 100) lines.emplace_back();
    if (c == '"' || c == '\\' || c == '?')
      lines.back() += std::string{'\\', char(c)};
    else if (c < 0x20 || c > 0x7e)
      lines.back() += fmt::format("\\{:03o}", c);
    else
      lines.back() += char(c);
  }
  std::string out;
  for (const std::string &line : lines) out += fmt::format("{}    \"{}\"", out.empty() ? "" : "\n", line);
  return out;
}

std::string tool(const char *variable, const char *fallback) {
  const char *value = std::getenv(variable);
  return value && *value ? value : fallback;
}

// Runs `program args...` through the shell, its output kept for the message naming `what`.
void run_tool(const std::string &program, const char *variable, const std::vector<std::string> &args,
              const std::string &what) {
  std::string command = program;
  for (const std::string &a : args) command += " " + shell_quote(a);
  CommandResult r = run_command(command + " 2>&1", "`grove compile`");
  if (r.exit_code == 0) return;
  user_error(msg::kAotTool, what, command,
             r.exit_code == 127 ? fmt::format(msg::kAotNoTool, variable)
                                : fmt::format("exit status {}", r.exit_code),
             r.output);
}

void write_file(const fs::path &path, const std::string &bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out.flush()) user_error(msg::kAotWrite, path.string(), std::strerror(errno));
}

// A private directory inside out_dir (the results are renamed, not copied, into place), removed with
// what is left in it.
class OutTemp {
 public:
  explicit OutTemp(const fs::path &parent) {
    std::string pattern = (parent / ".grove-compile-XXXXXX").string();
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    if (!mkdtemp(buffer.data())) user_error(msg::kAotTempDir, parent.string(), std::strerror(errno));
    path_ = buffer.data();
  }
  ~OutTemp() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  OutTemp(const OutTemp &) = delete;
  OutTemp &operator=(const OutTemp &) = delete;
  fs::path operator/(const std::string &name) const { return path_ / name; }
  const fs::path &path() const { return path_; }

 private:
  fs::path path_;
};

// A section's name for an architecture: .grove_cuda.sm_90.
std::string section_of(const std::string &arch) { return ".grove_cuda." + arch; }

// The images and the weights, each through the assembler's .incbin in a section of its own; the
// files are found through the assembler's include path (-Wa,-I).
std::string images_assembly(const std::string &name, const std::vector<std::string> &arches, bool weights) {
  std::string s = "# Written by `grove compile --target cuda`: the kernels' images.\n";
  for (size_t i = 0; i < arches.size(); ++i)
    s += fmt::format(
        "\t.section {section},\"a\"\n"
        "\t.balign 64\n"
        "\t.globl {name}_grove_cuda_image{i}\n"
        "\t.hidden {name}_grove_cuda_image{i}\n"
        "{name}_grove_cuda_image{i}:\n"
        "\t.incbin \"image{i}.bin\"\n",
        fmt::arg("section", section_of(arches[i])), fmt::arg("name", name), fmt::arg("i", i));
  if (weights)
    s += fmt::format(
        "\t.section .rodata\n"
        "\t.balign 64\n"
        "\t.globl {0}_grove_weights\n"
        "\t.hidden {0}_grove_weights\n"
        "{0}_grove_weights:\n"
        "\t.incbin \"weights.safetensors\"\n",
        name);
  return s;
}

std::string descriptor_source(const std::string &name, const ModelAbi &abi,
                              const std::vector<std::string> &arches, const std::vector<uint64_t> &sizes,
                              uint64_t weights_size) {
  std::string s = fmt::format(
      "/* Written by `grove compile --target cuda`: the descriptor of model {} (include/grove/grove.h). */\n"
      "#include <grove/grove.h>\n"
      "#include <stddef.h>\n\n",
      abi.model);
  std::string images;
  for (size_t i = 0; i < arches.size(); ++i) {
    s += fmt::format("extern const unsigned char {}_grove_cuda_image{}[];\n", name, i);
    images += fmt::format("    {{\"{}\", {}_grove_cuda_image{}, {}u}},\n", arches[i], name, i, sizes[i]);
  }
  std::string weights = "NULL";
  if (weights_size > 0) {
    weights = name + "_grove_weights";
    s += fmt::format("extern const unsigned char {}[];\n", weights);
  }
  s += fmt::format(
      "\nstatic const grove_cuda_image images[] = {{\n{images}}};\n"
      "static const char abi_json[] =\n{json};\n"
      "static const grove_compiled_model descriptor = {{\n"
      "    {version}, \"{name}\", abi_json, NULL, NULL, {weights}, {weights_size}u, {count}, images}};\n\n"
      "const grove_compiled_model *{name}_grove_model(void) {{ return &descriptor; }}\n",
      fmt::arg("images", images), fmt::arg("json", c_string_literal(to_json(abi))),
      fmt::arg("version", kModelAbiVersion), fmt::arg("name", name), fmt::arg("weights", weights),
      fmt::arg("weights_size", weights_size), fmt::arg("count", arches.size()));
  return s;
}

std::string entry_source(const std::string &name) {
  return fmt::format(
      "/* Written by `grove compile`: what grove_model_open looks up in lib{0}.so. */\n"
      "#include <grove/grove.h>\n\n"
      "const grove_compiled_model *{0}_grove_model(void);\n"
      "const grove_compiled_model *grove_compiled_model_entry(void) {{ return {0}_grove_model(); }}\n",
      name);
}

std::string header_source(const std::string &name, const ModelAbi &abi,
                          const std::vector<std::string> &arches, bool embedded) {
  std::string params, sizes;
  for (const ModelAbi::Param &p : abi.params)
    params += fmt::format(" *   {} [{}]\n", p.name, fmt::join(p.shape, ", "));
  for (const auto &[var, value] : abi.sizes)
    sizes += fmt::format("{}{}={}", sizes.empty() ? "" : ",", var, value);
  std::string guard = "GROVE_MODEL_" + name + "_H";
  for (char &c : guard) c = char(std::toupper(static_cast<unsigned char>(c)));
  return fmt::format(
      "/* lib{name}: model {model} ('structure {structure}') compiled for CUDA by `grove compile --target "
      "cuda`.\n"
      " *\n"
      " * Kernels: {arches} ({form}, {blocks} x {threads}); sizes {sizes}; schedule {schedule}.\n"
      " * {weights}\n"
      " *\n"
      " * Open it with grove's C API (grove/grove.h, libgrove_runtime), which loads the CUDA driver:\n"
      " *   grove_model *model;\n"
      " *   grove_model_open(\"lib{name}.so\", &model);   (or "
      "grove_model_open_compiled({name}_grove_model(), ...))\n"
      " *   grove_model_bind_weights_file(model, \"weights.safetensors\");\n"
      " *   grove_model_run_{run}(model, ...);\n"
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
      fmt::arg("arches", fmt::join(arches, ", ")),
      fmt::arg("form", abi.cuda->persistent ? "persistent" : "per level"),
      fmt::arg("blocks", abi.cuda->blocks), fmt::arg("threads", abi.cuda->threads), fmt::arg("sizes", sizes),
      fmt::arg("schedule", abi.schedule),
      fmt::arg("weights", embedded ? "The weights are embedded: the model is ready to run when opened."
                                   : "The weights are not embedded: bind them before running the model."),
      fmt::arg("run", abi.runs_dags() ? "dags" : "trees"), fmt::arg("params", params),
      fmt::arg("guard", guard));
}

}  // namespace

std::vector<std::string> parse_arch_list(const std::string &text, const std::string &where) {
  static const std::regex arch("(sm|compute)_[0-9]{2,3}[a-z]?");
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= text.size()) {
    size_t end = text.find(',', begin);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(begin, end - begin);
    if (!std::regex_match(item, arch)) user_error(msg::kAotBadArch, where, item);
    if (std::find(out.begin(), out.end(), item) == out.end()) out.push_back(item);
    begin = end + 1;
  }
  if (out.empty()) user_error(msg::kAotNoArch, where);
  return out;
}

// 1. Check the name, the architectures and the output directory, and the weights to embed, before
//    any slow step.
// 2. The plan for the GPU, the kernels, and NVRTC's image for each architecture; the ABI with the
//    launch and each image's size and checksum.
// 3. The descriptor, the images' and weights' assembler file and the entry point, compiled.
// 4. The shared library (exporting only the two accessors), the static library (one relocatable
//    object with only <name>_grove_model global), the header; renamed into place.
CudaAotResult compile_cuda_library(const ilir::Program &program, const std::map<std::string, int64_t> &sizes,
                                   const CudaAotOptions &options) {
  // 1.
  const std::string name = options.name.empty() ? lower(program.name) : options.name;
  if (!is_identifier(name)) user_error(msg::kAotBadName, name);
  std::vector<std::string> arches =
      options.arches.empty() ? std::vector<std::string>{"sm_90"} : options.arches;
  for (const std::string &a : arches) parse_arch_list(a, "--arch");
  bool has_ptx = false;
  std::string lowest_sm;
  for (const std::string &a : arches) {
    if (a.rfind("compute_", 0) == 0)
      has_ptx = true;
    else if (lowest_sm.empty() || a.substr(3) < lowest_sm.substr(3))
      lowest_sm = a;
  }
  if (!options.ptx) {
    std::erase_if(arches, [](const std::string &a) { return a.rfind("compute_", 0) == 0; });
    if (arches.empty()) user_error(msg::kAotNoImage, "--arch");
  } else if (!has_ptx) {
    std::string digits = lowest_sm.substr(3);
    while (!digits.empty() && std::isalpha(static_cast<unsigned char>(digits.back()))) digits.pop_back();
    arches.push_back("compute_" + digits);
  }
  const CudaOptions cuda = parse_cuda_options(options.cuda_options, "--cuda");
  const fs::path out_dir = options.out_dir.empty() ? fs::path(".") : fs::path(options.out_dir);
  std::error_code ec;
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec))
    user_error(msg::kAotOutDirNotDir, out_dir.string());
  if (!fs::exists(out_dir, ec) && !fs::create_directories(out_dir, ec))
    user_error(msg::kAotOutDir, out_dir.string(), ec ? ec.message() : "unknown error");
  OutTemp tmp(out_dir);
  uint64_t weights_size = 0;
  if (!options.embed_weights_file.empty()) {
    const std::string &where = options.embed_weights_file;
    Weights weights = read_safetensors(where);
    for (const auto &[var, value] : bind_weights(program, weights, where)) {
      auto it = sizes.find(var);
      if (it != sizes.end() && it->second != value)
        user_error(msg::kAotWeightsSizes, where, var, value, var, it->second);
    }
    write_safetensors((tmp / "weights.safetensors").string(), weights);
    weights_size = fs::file_size(tmp / "weights.safetensors");
  }

  // 2.
  plan::LevelPlan plan = plan_for_cuda(program, sizes, options.schedule);
  CudaAotResult result;
  result.notes = plan.schedule.notes(program.structure);
  CudaSource source = emit_cuda(plan, cuda);
  result.notes.insert(result.notes.end(), source.notes.begin(), source.notes.end());
  ModelAbi abi = plan.abi;
  abi.function = source.kernels.front();
  abi.target = "cuda";
  abi.cuda = cuda_launch(source);
  std::vector<uint64_t> image_sizes;
  for (size_t i = 0; i < arches.size(); ++i) {
    std::string image = compile_with_nvrtc(source, arches[i], program.name).image;
    if (arches[i].rfind("compute_", 0) == 0) image.push_back('\0');  // PTX: text the driver reads to its NUL
    write_file(tmp / fmt::format("image{}.bin", i), image);
    abi.cuda->images.push_back({arches[i], image.size(), fnv1a64(image.data(), image.size())});
    image_sizes.push_back(image.size());
  }

  // 3.
  fs::create_directories(tmp.path() / "grove", ec);
  write_file(tmp / "grove" / "grove.h", kGroveHeaderText);
  const std::string cc = tool("CC", "cc");
  const std::string include = "-I" + tmp.path().string();
  write_file(tmp / "descriptor.c", descriptor_source(name, abi, arches, image_sizes, weights_size));
  run_tool(
      cc, "CC",
      {"-O2", "-fPIC", include, "-c", (tmp / "descriptor.c").string(), "-o", (tmp / "descriptor.o").string()},
      "the model's descriptor");
  write_file(tmp / "images.s", images_assembly(name, arches, weights_size > 0));
  run_tool(cc, "CC",
           {"-c", "-Wa,--noexecstack", "-Wa,-I" + tmp.path().string(), (tmp / "images.s").string(), "-o",
            (tmp / "images.o").string()},
           "the embedded kernels");
  write_file(tmp / "entry.c", entry_source(name));
  run_tool(cc, "CC",
           {"-O2", "-fPIC", include, "-c", (tmp / "entry.c").string(), "-o", (tmp / "entry.o").string()},
           "the library's entry point");

  // 4.
  const std::string so_name = "lib" + name + ".so", a_name = "lib" + name + ".a", h_name = name + ".h";
  write_file(
      tmp / "exports.map",
      fmt::format("{{\n  global: grove_compiled_model_entry; {}_grove_model;\n  local: *;\n}};\n", name));
  run_tool(cc, "CC",
           {"-shared", "-o", (tmp / so_name).string(), (tmp / "descriptor.o").string(),
            (tmp / "images.o").string(), (tmp / "entry.o").string(),
            "-Wl,--version-script=" + (tmp / "exports.map").string(), "-Wl,-soname," + so_name,
            "-Wl,-z,noexecstack", "-Wl,--no-undefined"},
           so_name);
  const fs::path combined = tmp / (name + ".o");
  run_tool(cc, "CC",
           {"-r", "-nostdlib", "-o", combined.string(), (tmp / "descriptor.o").string(),
            (tmp / "images.o").string()},
           a_name);
  run_tool(tool("OBJCOPY", "objcopy"), "OBJCOPY",
           {"--keep-global-symbol=" + name + "_grove_model", combined.string()}, a_name);
  run_tool(tool("AR", "ar"), "AR", {"rcs", (tmp / a_name).string(), combined.string()}, a_name);
  write_file(tmp / h_name, header_source(name, abi, arches, weights_size > 0));
  for (const std::string &file : {so_name, a_name, h_name}) {
    const fs::path to = out_dir / file;
    fs::rename(tmp / file, to, ec);
    if (ec) user_error(msg::kAotRename, (tmp / file).string(), to.string(), ec.message());
  }
  result.name = name;
  result.images = arches;
  result.shared_library = (out_dir / so_name).string();
  result.static_library = (out_dir / a_name).string();
  result.header = (out_dir / h_name).string();
  return result;
}

}  // namespace grove::cuda
