#include "backends/runtime/CpuFeatures.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__) && defined(__x86_64__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace grove {

CpuFeatures cpu_features() {
  CpuFeatures f;
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.fma = c & (1u << 12);
  f.f16c = c & (1u << 29);
  unsigned max_leaf = __get_cpuid_max(0, nullptr);
  if (max_leaf < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  f.avx2 = b & (1u << 5);
  f.avx512f = b & (1u << 16);
  f.avx512dq = b & (1u << 17);
  f.avx512ifma = b & (1u << 21);
  f.avx512cd = b & (1u << 28);
  f.avx512bw = b & (1u << 30);
  f.avx512vl = b & (1u << 31);
  f.avx512vbmi = c & (1u << 1);
  f.avx512vnni = c & (1u << 11);
  f.amx_bf16 = d & (1u << 22);
  f.avx512fp16 = d & (1u << 23);
  f.amx_tile = d & (1u << 24);
  f.amx_int8 = d & (1u << 25);
  __cpuid_count(7, 1, a, b, c, d);
  f.avxvnni = a & (1u << 4);
  f.avx512bf16 = a & (1u << 5);
#endif
  return f;
}

std::string amx_state_refusal() {
  static const std::string refusal = [] {
    const CpuFeatures f = cpu_features();
    if (!f.amx_tile || !f.amx_bf16) return std::string("this CPU has no AMX");
    if (const char *amx = std::getenv("GROVE_AMX"); amx && std::string(amx) == "off")
      return std::string("GROVE_AMX=off is set");
#if defined(__linux__) && defined(__x86_64__)
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (::syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0) return std::string();
    return fmt::format("Linux refused this process the AMX tile state (arch_prctl: {})",
                       std::strerror(errno));
#else
    return std::string("AMX tiles are only requested from Linux on x86-64");
#endif
  }();
  return refusal;
}

extern "C" int grove_bf16_library_variant(void) {
  if (const char *forced = std::getenv("GROVE_LIBRARY_VARIANT"); forced && std::strcmp(forced, "fp32") == 0)
    return 2;
  const CpuFeatures f = cpu_features();
  if (f.amx_bf16 && f.amx_tile) return amx_state_refusal().empty() ? 0 : 2;
  return f.avx512bf16 ? 1 : 2;
}

}  // namespace grove
