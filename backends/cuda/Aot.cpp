#include "backends/cuda/Aot.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <regex>

#include "backends/aot/LibraryWriter.h"
#include "backends/cuda/CudaEmitter.h"
#include "backends/cuda/GroveHeaderText.h"
#include "backends/cuda/KernelArgs.h"
#include "backends/cuda/Messages.h"
#include "backends/cuda/Nvrtc.h"
#include "support/Error.h"
#include "support/Safetensors.h"

namespace grove::cuda {

namespace fs = std::filesystem;
namespace msg = cuda_messages;

namespace {

using aot::write_file;

// A section's name for an architecture: .grove_cuda.sm_90.
std::string section_of(const std::string &arch) { return ".grove_cuda." + arch; }

// The images and the weights, each through the assembler's .incbin in a section of its own; the
// files are found through the assembler's include path (-Wa,-I).
std::string images_assembly(const std::string &name, const std::vector<std::string> &arches, bool weights) {
  std::string s = "# Written by `grove compile --target cuda`: the kernels' images.\n";
  for (size_t i = 0; i < arches.size(); ++i)
    s += aot::incbin_assembly(section_of(arches[i]) + ",\"a\"", fmt::format("{}_grove_cuda_image{}", name, i),
                              fmt::format("image{}.bin", i));
  if (weights) s += aot::incbin_assembly(".rodata", name + "_grove_weights", "weights.safetensors");
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
      fmt::arg("images", images), fmt::arg("json", aot::c_string_literal(to_json(abi))),
      fmt::arg("version", kModelAbiVersion), fmt::arg("name", name), fmt::arg("weights", weights),
      fmt::arg("weights_size", weights_size), fmt::arg("count", arches.size()));
  return s;
}

std::string header_source(const std::string &name, const ModelAbi &abi,
                          const std::vector<std::string> &arches, bool embedded) {
  return fmt::format(
             "/* lib{name}: model {model} ('structure {structure}') compiled for CUDA by `grove compile "
             "--target "
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
             " */\n",
             fmt::arg("name", name), fmt::arg("model", abi.model), fmt::arg("structure", abi.structure),
             fmt::arg("arches", fmt::join(arches, ", ")),
             fmt::arg("form", abi.cuda->persistent ? "persistent" : "per level"),
             fmt::arg("blocks", abi.cuda->blocks), fmt::arg("threads", abi.cuda->threads),
             fmt::arg("sizes", aot::header_sizes(abi)), fmt::arg("schedule", abi.schedule),
             fmt::arg("weights", aot::header_weights(embedded)),
             fmt::arg("run", abi.runs_dags() ? "dags" : "trees"),
             fmt::arg("params", aot::header_params(abi))) +
         aot::header_declarations(name);
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
  const std::string name = aot::library_name(options.name, program.name);
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
  const fs::path out_dir = aot::prepare_out_dir(options.out_dir);
  aot::LibraryWriter writer(name, out_dir);
  uint64_t weights_size = 0;
  if (!options.embed_weights_file.empty()) {
    const std::string &where = options.embed_weights_file;
    Weights weights = read_safetensors(where);
    aot::check_weights_fit(program, sizes, weights, where);
    write_safetensors((writer / "weights.safetensors").string(), weights);
    weights_size = fs::file_size(writer / "weights.safetensors");
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
    write_file(writer / fmt::format("image{}.bin", i), image);
    abi.cuda->images.push_back({arches[i], image.size(), fnv1a64(image.data(), image.size())});
    image_sizes.push_back(image.size());
  }

  // 3.
  std::error_code ec;
  fs::create_directories(writer.temp() / "grove", ec);
  write_file(writer / "grove" / "grove.h", kGroveHeaderText);
  const std::string include = "-I" + writer.temp().string();
  const std::vector<std::string> objects{
      writer.compile_c("descriptor", descriptor_source(name, abi, arches, image_sizes, weights_size),
                       {include}, "the model's descriptor"),
      writer.assemble("images", images_assembly(name, arches, weights_size > 0), "the embedded kernels")};
  writer.compile_entry({include});

  // 4.
  writer.link_shared(objects, {});
  writer.link_static(objects);
  writer.write_header(header_source(name, abi, arches, weights_size > 0));
  const aot::LibraryFiles files = writer.move_into_place();
  result.name = name;
  result.images = arches;
  result.shared_library = files.shared_library;
  result.static_library = files.static_library;
  result.header = files.header;
  return result;
}

}  // namespace grove::cuda
