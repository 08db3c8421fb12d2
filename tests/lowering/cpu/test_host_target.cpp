// grove compiles only for the instruction sets the running CPU reports (lowering/HostTarget.h):
// the host target keeps an AVX-512 generation only when the CPU has all of it, and the code every
// model compiles to uses no instruction of an extension the CPU lacks.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "frontend/dsl/Frontend.h"
#include "lowering/cpu/HostTarget.h"
#include "lowering/cpu/Lower.h"
#include "scheduling/Schedule.h"

namespace grove::lowering {
namespace {

namespace fs = std::filesystem;
using T = Halide::Target;

TEST(HostTarget, KeepsAGenerationOnlyWhenTheCpuHasAllOfIt) {
  CpuFeatures f = cpu_features();
  T target = host_target();
  if (target.arch != T::X86) GTEST_SKIP() << "not an x86 machine";
  bool skylake = f.avx512f && f.avx512cd && f.avx512bw && f.avx512dq && f.avx512vl;
  EXPECT_EQ(target.has_feature(T::AVX512_Skylake), skylake);
  EXPECT_EQ(target.has_feature(T::AVX512_Cannonlake), skylake && f.avx512ifma && f.avx512vbmi);
  if (target.has_feature(T::AVX512_SapphireRapids)) {
    EXPECT_TRUE(f.avx512fp16 && f.amx_tile && f.amx_bf16 && f.avxvnni && f.avx512bf16 && f.avx512vnni);
  }
  // Halide's own guess, for the record: on an AMD CPU with AVX512-BF16 it says Sapphire Rapids.
  if (Halide::get_host_target().has_feature(T::AVX512_SapphireRapids) && !f.avx512fp16) {
    EXPECT_FALSE(target.has_feature(T::AVX512_SapphireRapids)) << "the fix this test guards";
  }
}

// An instruction set the CPU may lack, and how its instructions look in LLVM's AT&T assembly.
struct Extension {
  const char *name;
  bool present;
  std::regex instruction;
};

std::vector<Extension> missing_extensions() {
  CpuFeatures f = cpu_features();
  // AVX512-FP16: half-precision arithmetic (v...ph / v...sh) and vmovw; F16C's vcvtps2ph and
  // vcvtph2ps are not in it.
  std::vector<Extension> all = {
      {"AVX512-FP16", f.avx512fp16, std::regex(R"(^\s*(vmovw|vmovsh|v(?!cvtps2ph)[a-z0-9]*(ph|sh)x?)\s)")},
      {"AMX", f.amx_tile,
       std::regex(R"(^\s*(ldtilecfg|sttilecfg|tileloadd\w*|tilestored|tilezero|tilerelease|tdp\w+)\b)")},
      {"AVX512-BF16", f.avx512bf16, std::regex(R"(^\s*(vdpbf16ps|vcvtne2ps2bf16|vcvtneps2bf16)\s)")},
      {"AVX-VNNI", f.avxvnni, std::regex(R"(^\s*\{vex\}\s*vpdp\w+)")},
      {"AVX512-VNNI", f.avx512vnni, std::regex(R"(^\s*vpdp(busd|busds|wssd|wssds)\s.*%zmm)")},
      {"AVX-512", f.avx512f, std::regex(R"(%zmm|%k[1-7])")},
      {"AVX2/FMA", f.avx2 && f.fma, std::regex(R"(^\s*vfn?m(add|sub)\w+\s)")},
  };
  std::vector<Extension> missing;
  for (Extension &e : all)
    if (!e.present) missing.push_back(std::move(e));
  return missing;
}

// Every size variable bound to 32 (a multiple of every vector width and panel).
std::map<std::string, int64_t> small_sizes(const ilir::Program &program) {
  std::map<std::string, int64_t> sizes;
  for (const std::string &v : program.size_vars) sizes[v] = 32;
  return sizes;
}

TEST(HostTarget, EveryModelCompilesToInstructionsTheCpuHas) {
  std::vector<Extension> missing = missing_extensions();
  fs::path dir = fs::temp_directory_path() / ("grove_host_target_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  int models = 0;
  for (const fs::directory_entry &entry : fs::directory_iterator(fs::path(GROVE_SOURCE_DIR) / "models")) {
    if (entry.path().extension() != ".grove") continue;
    SCOPED_TRACE(entry.path().string());
    ilir::Program program = dsl::parse_model_file(entry.path().string());
    LowerOptions options;
    options.sizes = small_sizes(program);
    options.target = host_target().with_feature(T::NoRuntime);
    options.schedule = scheduling::default_schedule(program, vector_bytes(options.target));
    LoweredModel lowered = lower(program, options);
    fs::path asm_file = dir / (entry.path().stem().string() + ".s");
    lowered.module.compile({{Halide::OutputFileType::assembly, asm_file.string()}});
    std::ifstream in(asm_file);
    std::string line;
    int64_t lines = 0;
    while (std::getline(in, line)) {
      lines++;
      for (const Extension &e : missing)
        EXPECT_FALSE(std::regex_search(line, e.instruction)) << e.name << " instruction: " << line;
    }
    EXPECT_GT(lines, 100) << "no assembly written";
    models++;
  }
  EXPECT_GE(models, 8);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace grove::lowering
