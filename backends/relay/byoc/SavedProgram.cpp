// A compiled program on disk (SavedProgram.h): building the directory, loading it back with its
// kernels, and the kernel compiler that serves them to the VM.

#include "backends/relay/byoc/SavedProgram.h"

#include <fmt/format.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "backends/relay/byoc/Codegen.h"
#include "frontend/relay/Parser.h"
#include "frontend/relay/Printer.h"
#include "frontend/relay/TypeInfer.h"
#include "support/Error.h"
#include "support/FileIO.h"

namespace grove::relay {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char *kFormat = "grove-relay-program";
constexpr int kFormatVersion = 1;
constexpr const char *kManifest = "manifest.json";
constexpr const char *kModule = "module.relay";
// When an external function's kernel is made.
constexpr const char *kAtBuild = "at build";       // saved by its code generator: the artifact is loaded
constexpr const char *kAtLoad = "at load";         // its code generator saves nothing: compiled at load
constexpr const char *kAtRunTime = "at run time";  // a `?` in its input types: compiled per shape met

// FNV-1a, 64 bits, as 16 hex digits: a check against accidental change, not against an adversary.
struct Fnv1a {
  uint64_t h = 0xcbf29ce484222325ull;
  void add(const void *data, size_t n) {
    const auto *p = static_cast<const unsigned char *>(data);
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  }
  void add(const std::string &s) { add(s.data(), s.size()); }
  std::string hex() const { return fmt::format("{:016x}", h); }
};

std::string read_file_bytes(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// What the function computes: its printed text (attributes included) and its constants' bytes.
std::string function_fingerprint(const Expr &function) {
  std::vector<NDArray> meta;
  Fnv1a hash;
  hash.add(print_expr(function, &meta));
  for (const NDArray &c : meta) {
    hash.add(fmt::format("{}{}", to_string(c.dtype()), shape_to_string(c.shape())));
    hash.add(c.raw(), c.nbytes());
  }
  return hash.hex();
}

// The function's inputs as the VM hands them to a kernel: each parameter's tensors, a tuple's fields
// flattened left to right. False when one is not a tensor or a tuple of them.
bool flatten_type(const Type &type, std::vector<DType> &dtypes, std::vector<Shape> &shapes) {
  if (const auto *t = type.as<TensorType>()) {
    dtypes.push_back(t->dtype);
    shapes.push_back(t->shape);
    return true;
  }
  if (const auto *t = type.as<TupleType>()) {
    for (const Type &f : t->fields)
      if (!flatten_type(f, dtypes, shapes)) return false;
    return true;
  }
  return false;
}

bool all_known(const std::vector<Shape> &shapes) {
  for (const Shape &s : shapes)
    for (int64_t d : s)
      if (d == kAnyDim) return false;
  return true;
}

// A function an external code generator compiles to a kernel (Compiler="<name>", not one the VM
// calls with InvokeExternal: function_codegen).
struct External {
  std::string global, symbol, codegen;
  Expr function;
  bool tensors = false;  // every input a tensor (tuples flattened)
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
};

std::vector<External> external_functions(const Module &module) {
  std::vector<External> all;
  for (const auto &[name, fn] : module.functions()) {
    const auto *f = fn.as<Function>();
    const AttrValue *compiler = f->attrs.find(attr::kCompiler);
    if (!compiler || function_codegen(*f) != nullptr) continue;
    External e;
    e.global = name;
    const AttrValue *symbol = f->attrs.find(attr::kGlobalSymbol);
    e.symbol = symbol && symbol->kind == AttrValue::Kind::String ? symbol->s : name;
    e.codegen = compiler->s;
    e.function = fn;
    e.tensors = true;
    for (const Expr &p : f->params)
      e.tensors = e.tensors && flatten_type(p->checked_type, e.dtypes, e.shapes);
    all.push_back(std::move(e));
  }
  return all;
}

json shape_json(const Shape &shape) {
  json dims = json::array();
  for (int64_t d : shape) dims.push_back(d == kAnyDim ? json("?") : json(d));
  return dims;
}

// A file name the manifest may name: one plain name inside the directory.
bool plain_file_name(const std::string &name) {
  if (name.empty() || name[0] == '.' || name.size() > 200) return false;
  for (char c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  return true;
}

// Whether `path` lies inside directory `dir` (or is it).
bool inside(const fs::path &path, const fs::path &dir) {
  std::error_code ec;
  const fs::path rel = fs::weakly_canonical(path, ec).lexically_relative(fs::weakly_canonical(dir, ec));
  return !rel.empty() && *rel.begin() != "..";
}

// A directory `grove relay build` wrote: its manifest.json says so.
bool is_build_output(const fs::path &dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / kManifest, ec)) return false;
  json manifest =
      json::parse(read_file_bytes((dir / kManifest).string()), nullptr, /*allow_exceptions=*/false);
  return manifest.is_object() && manifest.value("format", json()) == kFormat;
}

// A fresh directory next to `target` (mkdtemp: mode 0700), removed with its contents unless kept.
class SiblingDir {
 public:
  SiblingDir(const fs::path &target, const std::string &tag) {
    const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::string pattern = (parent / fmt::format(".{}.{}-XXXXXX", target.filename().string(), tag)).string();
    if (!mkdtemp(pattern.data()))
      user_error("could not create a directory next to {} ({}): {}", target.string(), pattern,
                 std::strerror(errno));
    path_ = pattern;
  }
  ~SiblingDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  SiblingDir(const SiblingDir &) = delete;
  SiblingDir &operator=(const SiblingDir &) = delete;
  const fs::path &path() const { return path_; }
  void keep() { path_.clear(); }

 private:
  fs::path path_;
};

// Puts the finished `built` at `target`: a previous output there is moved aside first (then
// removed), and moved back if the rename fails.
void move_into_place(SiblingDir &built, const fs::path &target) {
  std::error_code ec;
  const mode_t mask = umask(0);  // mkdtemp made it 0700; a directory's usual mode is 0777 less the umask
  umask(mask);
  fs::permissions(built.path(), static_cast<fs::perms>(0777 & ~mask), ec);
  if (fs::exists(target, ec)) {
    SiblingDir old(target, "old");
    fs::remove(old.path(), ec);  // rename needs the name free
    fs::rename(target, old.path(), ec);
    if (ec) user_error("could not move the previous {} aside: {}", target.string(), ec.message());
    fs::rename(built.path(), target, ec);
    if (ec) {
      std::error_code ignored;
      fs::rename(old.path(), target, ignored);
      user_error("could not rename {} to {}: {}", built.path().string(), target.string(), ec.message());
    }
    built.keep();
    return;  // `old` (the previous output) is removed as it goes
  }
  fs::rename(built.path(), target, ec);
  if (ec) user_error("could not rename {} to {}: {}", built.path().string(), target.string(), ec.message());
  built.keep();
}

const Codegen *codegen_named(const std::string &name) {
  for (const Codegen &c : all_codegens())
    if (c.name == name) return &c;
  return nullptr;
}

std::string known_codegens() {
  std::string known;
  for (const Codegen &c : all_codegens())
    if (c.make_compiler) known += (known.empty() ? "" : ", ") + c.name;
  return known;
}

// One compiler per code generator, made on first use. A function its code generator cannot compile
// is the user's error here: a saved program has no compiler to fall back to.
class Compilers {
 public:
  std::shared_ptr<Kernel> compile(const Codegen &codegen, const External &e) {
    std::unique_ptr<KernelCompiler> &slot = compilers_[codegen.name];
    if (!slot) slot = codegen.make_compiler();
    return slot->compile(e.function, e.dtypes, e.shapes).kernel_or_user_error();
  }

 private:
  std::map<std::string, std::unique_ptr<KernelCompiler>> compilers_;
};

// The manifest entry of `e`, whose kernel is made `when`; `artifact` its file in `dir` or "".
json manifest_entry(const External &e, const std::string &when, const fs::path &dir,
                    const std::string &artifact) {
  json inputs = json::array();
  for (size_t i = 0; i < e.shapes.size(); ++i)
    inputs.push_back({{"dtype", to_string(e.dtypes[i])}, {"shape", shape_json(e.shapes[i])}});
  json entry = {{"symbol", e.symbol},   {"global", e.global},
                {"codegen", e.codegen}, {"inputs", inputs},
                {"compiled", when},     {"function_fnv1a", function_fingerprint(e.function)},
                {"artifact", nullptr}};
  if (!artifact.empty()) {
    const std::string bytes = read_file_bytes((dir / artifact).string());
    Fnv1a hash;
    hash.add(bytes);
    entry["artifact"] = artifact;
    entry["artifact_bytes"] = bytes.size();
    entry["artifact_fnv1a"] = hash.hex();
  }
  return entry;
}

class PreloadedKernelCompiler : public KernelCompiler {
 public:
  PreloadedKernelCompiler(PreloadedKernels kernels, std::unique_ptr<KernelCompiler> fallback)
      : kernels_(std::move(kernels)), fallback_(std::move(fallback)) {}

  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    if (const auto *fn = primitive.as<Function>(); fn && fn->attrs.find(attr::kCompiler)) {
      const AttrValue *symbol = fn->attrs.find(attr::kGlobalSymbol);
      if (symbol && symbol->kind == AttrValue::Kind::String) {
        auto it = kernels_.find(symbol->s);
        if (it != kernels_.end() && it->second.dtypes == dtypes && it->second.shapes == shapes)
          return KernelResult::compiled(it->second.kernel);
      }
    }
    return fallback_->compile(primitive, dtypes, shapes);
  }

  std::string name() const override { return "saved kernels, else " + fallback_->name(); }

 private:
  PreloadedKernels kernels_;
  std::unique_ptr<KernelCompiler> fallback_;
};

// The kernel of one manifest entry, checked against the module's function `e` (steps 4a-4d of
// load_program). `where` prefixes every message: "DIR/manifest.json: entry N (@symbol)".
std::shared_ptr<Kernel> load_entry(const json &entry, const External &e, const fs::path &dir,
                                   const std::string &where, Compilers &compilers) {
  const std::string codegen_name = entry.at("codegen").get<std::string>();
  const Codegen *codegen = codegen_named(codegen_name);
  if (!codegen || !codegen->make_compiler)
    user_error("{}: no code generator is named '{}' (grove has: {})", where, codegen_name, known_codegens());
  if (codegen_name != e.codegen)
    user_error("{}: the manifest says code generator '{}', but @{} in {} has Compiler=\"{}\"", where,
               codegen_name, e.global, kModule, e.codegen);
  // 4a. The inputs it was compiled for are the function's.
  const json &inputs = entry.at("inputs");
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  for (const json &input : inputs) {
    const std::string dtype = input.at("dtype").get<std::string>();
    std::optional<DType> d = parse_dtype(dtype);
    if (!d) user_error("{}: unknown dtype '{}'", where, dtype);
    dtypes.push_back(*d);
    Shape shape;
    for (const json &dim : input.at("shape")) shape.push_back(dim == "?" ? kAnyDim : dim.get<int64_t>());
    shapes.push_back(shape);
  }
  auto inputs_text = [](const std::vector<DType> &ds, const std::vector<Shape> &ss) {
    std::string text;
    for (size_t i = 0; i < ds.size(); ++i)
      text += fmt::format("{}Tensor[{}, {}]", i ? ", " : "", shape_to_string(ss[i]), to_string(ds[i]));
    return "(" + text + ")";
  };
  if (!e.tensors || dtypes != e.dtypes || shapes != e.shapes)
    user_error("{}: compiled for inputs {}, but @{} in {} takes {}", where, inputs_text(dtypes, shapes),
               e.global, kModule, e.tensors ? inputs_text(e.dtypes, e.shapes) : "other than tensors");
  // 4b. The function is the one it was compiled from.
  if (entry.at("function_fnv1a").get<std::string>() != function_fingerprint(e.function))
    user_error("{}: @{} in {} is not the function this entry was compiled from (its fingerprint differs)",
               where, e.global, kModule);
  // 4c. Its kernel: loaded, compiled now, or left to the VM.
  const std::string when = entry.at("compiled").get<std::string>();
  if (when == kAtRunTime) {
    if (all_known(e.shapes)) user_error("{}: compiled \"{}\", but its input shapes are known", where, when);
    return nullptr;
  }
  if (!all_known(e.shapes))
    user_error("{}: compiled \"{}\", but its input types have `?` (only \"{}\" can be)", where, when,
               kAtRunTime);
  if (when == kAtLoad) return compilers.compile(*codegen, e);
  if (when != kAtBuild)
    user_error("{}: \"compiled\" is \"{}\"; expected \"{}\", \"{}\" or \"{}\"", where, when, kAtBuild,
               kAtLoad, kAtRunTime);
  // 4d. The artifact is there, whole, and its code generator reads it.
  const std::string artifact = entry.at("artifact").get<std::string>();
  if (!plain_file_name(artifact))
    user_error("{}: the artifact '{}' is not a file name in {}", where, artifact, dir.string());
  const fs::path path = dir / artifact;
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) user_error("{}: the artifact {} is missing", where, path.string());
  const std::string bytes = read_file_bytes(path.string());
  Fnv1a hash;
  hash.add(bytes);
  if (bytes.size() != entry.at("artifact_bytes").get<size_t>() ||
      hash.hex() != entry.at("artifact_fnv1a").get<std::string>())
    user_error("{}: the artifact {} is corrupt ({} bytes, FNV-1a {}; the manifest says {} bytes, {})", where,
               path.string(), bytes.size(), hash.hex(), entry.at("artifact_bytes").dump(),
               entry.at("artifact_fnv1a").dump());
  if (!codegen->load)
    user_error("{}: the code generator '{}' cannot load saved kernels (its entry should say \"{}\")", where,
               codegen->name, kAtLoad);
  try {
    return codegen->load(e.function, e.shapes, path.string());
  } catch (const UserError &error) {
    user_error("{}: {}", where, error.what());
  }
}

}  // namespace

bool is_program_directory(const std::string &path) {
  std::error_code ec;
  return fs::is_directory(path, ec);
}

// 1. Check `dir`: not an input, not holding one, and empty or a previous build's output.
// 2. Partition, write module.relay into a fresh sibling directory and read it back: the kernels are
//    compiled from the functions as load_program will read them, so their fingerprints agree.
// 3. Compile each external function of known input types (its errors surface now) and save its
//    kernel when its code generator can; write the manifest.
// 4. Rename the sibling into place.
void build_program(const Module &module, const std::vector<std::string> &targets, const std::string &dir,
                   const std::vector<std::string> &inputs) {
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  if (target.empty() || target == "." || target == "..") user_error("--out {}: name a new directory", dir);
  for (const std::string &input : inputs)
    if (!input.empty() && (same_file(target, input) || inside(input, target)))
      user_error("--out {} would overwrite the input {}", dir, input);
  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec))
      user_error("--out {} exists and is not a directory; grove relay build writes a directory", dir);
    if (!fs::is_empty(target, ec) && !is_build_output(target))
      user_error(
          "--out {} exists and is not the output of grove relay build (it has no {} of format \"{}\"): "
          "grove does not replace what it did not write; remove it or name another directory",
          dir, kManifest, kFormat);
  }

  Module partitioned = targets.empty() ? module : partition_for_targets(module, targets);
  SiblingDir built(target, "build");
  write_relay_file((built.path() / kModule).string(), partitioned);
  Module saved = parse_relay_file((built.path() / kModule).string());
  infer_types(saved);
  check_external_functions(saved);

  Compilers compilers;
  json functions = json::array();
  int unnamed = 0;
  for (const External &e : external_functions(saved)) {
    if (!e.tensors || !all_known(e.shapes)) {
      functions.push_back(manifest_entry(e, kAtRunTime, built.path(), ""));
      continue;
    }
    const Codegen &codegen = find_codegen(e.codegen);
    std::shared_ptr<Kernel> kernel = compilers.compile(codegen, e);
    if (!codegen.save) {
      functions.push_back(manifest_entry(e, kAtLoad, built.path(), ""));
      continue;
    }
    std::string artifact = e.symbol + codegen.artifact_extension;
    if (!plain_file_name(artifact) || artifact == kManifest || artifact.starts_with("module."))
      artifact = fmt::format("function_{}{}", unnamed++, codegen.artifact_extension);
    codegen.save(*kernel, (built.path() / artifact).string());
    functions.push_back(manifest_entry(e, kAtBuild, built.path(), artifact));
  }
  json manifest = {{"format", kFormat},
                   {"format_version", kFormatVersion},
                   {"module", kModule},
                   {"targets", targets},
                   {"functions", functions}};
  {
    const std::string path = (built.path() / kManifest).string();
    std::ofstream out(path);
    out << manifest.dump(2) << "\n";
    if (!out.flush()) user_error("could not write {}: {}", path, std::strerror(errno));
  }
  move_into_place(built, target);
}

// 1. The manifest: JSON of this format and version.
// 2. The module, typed; its external functions name code generators grove has.
// 3. Each entry names one external function, once; each external function has an entry.
// 4. Each entry's kernel (load_entry).
SavedProgram load_program(const std::string &dir) {
  const fs::path root(dir);
  const std::string manifest_path = (root / kManifest).string();
  std::error_code ec;
  if (!fs::is_directory(root, ec)) user_error("{} is not a directory", dir);
  if (!fs::is_regular_file(manifest_path, ec))
    user_error("{} has no {}: it is not a program grove relay build wrote", dir, kManifest);
  json manifest;
  try {
    manifest = json::parse(read_file_bytes(manifest_path));
  } catch (const json::exception &e) {
    user_error("{}: not valid JSON: {}", manifest_path, e.what());
  }
  SavedProgram program;
  json functions;
  try {
    if (!manifest.is_object() || manifest.value("format", json()) != kFormat)
      user_error("{}: not a manifest of grove relay build (its \"format\" is not \"{}\")", manifest_path,
                 kFormat);
    if (manifest.at("format_version") != kFormatVersion)
      user_error("{}: format version {}, this grove reads version {}", manifest_path,
                 manifest.at("format_version").dump(), kFormatVersion);
    program.targets = manifest.at("targets").get<std::vector<std::string>>();
    functions = manifest.at("functions");
    if (!functions.is_array()) user_error("{}: \"functions\" is not an array", manifest_path);
  } catch (const json::exception &e) {
    user_error("{}: {}", manifest_path, e.what());
  }

  program.module = parse_relay_file((root / kModule).string());
  infer_types(program.module);
  check_external_functions(program.module);
  std::map<std::string, External> externals;
  for (External &e : external_functions(program.module)) externals.emplace(e.symbol, std::move(e));

  Compilers compilers;
  std::map<std::string, bool> seen;
  for (size_t i = 0; i < functions.size(); ++i) {
    const json &entry = functions[i];
    std::string where = fmt::format("{}: entry {}", manifest_path, i);
    try {
      const std::string symbol = entry.at("symbol").get<std::string>();
      where += " (" + symbol + ")";
      auto it = externals.find(symbol);
      if (it == externals.end())
        user_error("{}: {} has no external function with global_symbol \"{}\"", where, kModule, symbol);
      if (seen[symbol]) user_error("{}: a second entry for the same function", where);
      seen[symbol] = true;
      if (std::shared_ptr<Kernel> kernel = load_entry(entry, it->second, root, where, compilers))
        program.kernels[symbol] = PreloadedKernel{it->second.dtypes, it->second.shapes, std::move(kernel)};
    } catch (const json::exception &e) {
      user_error("{}: {}", where, e.what());
    }
  }
  for (const auto &[symbol, e] : externals)
    if (!seen[symbol])
      user_error("{}: @{} in {} (Compiler=\"{}\") has no entry", manifest_path, e.global, kModule, e.codegen);
  return program;
}

std::unique_ptr<KernelCompiler> make_preloaded_kernel_compiler(PreloadedKernels kernels,
                                                               std::unique_ptr<KernelCompiler> fallback) {
  return std::make_unique<PreloadedKernelCompiler>(std::move(kernels), std::move(fallback));
}

}  // namespace grove::relay
