#include "backends/relay/byoc/Codegen.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "frontend/relay/passes/PassList.h"
#include "support/Error.h"

namespace grove::relay {

const std::vector<Codegen> &all_codegens() {
  static const std::vector<Codegen> table = [] {
    std::vector<Codegen> all{dnnl_codegen(), ccompiler_codegen(), grove_codegen()};
    std::sort(all.begin(), all.end(), [](const Codegen &a, const Codegen &b) { return a.name < b.name; });
    return all;
  }();
  return table;
}

const Codegen *codegen_named(std::string_view name) {
  for (const Codegen &c : all_codegens())
    if (c.name == name) return &c;
  return nullptr;
}

const Codegen *function_codegen(const Function &fn) {
  const AttrValue *compiler = fn.attrs.find(attr::kCompiler);
  if (compiler == nullptr) return nullptr;
  const Codegen *c = codegen_named(compiler->s);
  return c != nullptr && c->prepare_function != nullptr ? c : nullptr;
}

const Codegen &find_codegen(std::string_view name) {
  std::string known;
  for (const Codegen &c : all_codegens()) {
    if (c.name == name) return c;
    known += (known.empty() ? "" : ", ") + c.name;
  }
  user_error("no external code generator is named '{}' (grove has: {})", name, known);
}

Module partition_for_targets(const Module &module, const std::vector<std::string> &names) {
  if (names.empty()) user_error("--target: name at least one code generator");
  PassOptions options;
  std::string list;
  for (const std::string &name : names) {
    options.targets.push_back(find_codegen(name).target());
    list += (list.empty() ? "" : "+") + name;
  }
  return run_passes(
      module, parse_pass_list(fmt::format("merge-composite={0},annotate={0},merge-regions,partition", list)),
      options);
}

namespace {

class ExternalKernelCompiler : public KernelCompiler {
 public:
  explicit ExternalKernelCompiler(std::unique_ptr<KernelCompiler> fallback)
      : fallback_(std::move(fallback)) {}

  KernelResult compile(const Expr &primitive, const std::vector<DType> &dtypes,
                       const std::vector<Shape> &shapes) override {
    const AttrValue *compiler = primitive.as<Function>()->attrs.find(attr::kCompiler);
    if (!compiler) return fallback_->compile(primitive, dtypes, shapes);
    std::unique_ptr<KernelCompiler> &slot = compilers_[compiler->s];
    if (!slot) {
      const Codegen &codegen = find_codegen(compiler->s);
      if (!codegen.make_compiler)
        user_error("{}: the code generator '{}' compiles no partitioned functions",
                   to_string(primitive->span), codegen.name);
      slot = codegen.make_compiler();
    }
    // A partitioned function belongs to its code generator: nothing falls back from it, and what it
    // cannot compile is said as such.
    KernelResult result = slot->compile(primitive, dtypes, shapes);
    if (result.is_unsupported())
      return KernelResult::unsupported(
          fmt::format("{}: the function has Compiler=\"{}\", but the {} code generator cannot compile it: {}",
                      to_string(primitive->span), compiler->s, compiler->s, result.unsupported().reason));
    return result;
  }

  std::string name() const override { return "external code generators, else " + fallback_->name(); }

 private:
  std::unique_ptr<KernelCompiler> fallback_;
  std::map<std::string, std::unique_ptr<KernelCompiler>> compilers_;
};

}  // namespace

std::unique_ptr<KernelCompiler> make_external_kernel_compiler(std::unique_ptr<KernelCompiler> fallback) {
  return std::make_unique<ExternalKernelCompiler>(std::move(fallback));
}

void check_external_functions(const Module &module) {
  for (const auto &[name, fn] : module.functions()) {
    const AttrValue *compiler = fn.as<Function>()->attrs.find(attr::kCompiler);
    if (!compiler || function_codegen(*fn.as<Function>()) != nullptr) continue;
    const Codegen *found = nullptr;
    for (const Codegen &c : all_codegens())
      if (c.name == compiler->s) found = &c;
    if (!found || !found->make_compiler) {
      std::string known;
      for (const Codegen &c : all_codegens())
        if (c.make_compiler) known += (known.empty() ? "" : ", ") + c.name;
      user_error(
          "{}: @{} has Compiler=\"{}\", but no code generator of that name compiles partitioned "
          "functions (grove has: {})",
          to_string(fn->span), name, compiler->s, known);
    }
  }
}

}  // namespace grove::relay
