#pragma once
// GROVE_ALSO_X86_64_V4 before a function: it is also built for x86-64-v4 (AVX-512 F, BW, CD, DQ,
// VL), and the build the CPU can run is chosen when the program loads (GCC's and clang's
// target_clones). Its loops must give the same bits either way: grove_training is built without
// FMA contraction (training/CMakeLists.txt). Sanitized builds define GROVE_NO_TARGET_CLONES: the
// load-time resolvers run before the sanitizers' runtimes start (under ThreadSanitizer a program
// crashed in them), so there the function has its default build only.

#if defined(GROVE_NO_TARGET_CLONES)
#define GROVE_ALSO_X86_64_V4
#else
#define GROVE_ALSO_X86_64_V4 __attribute__((target_clones("arch=x86-64-v4", "default")))
#endif
