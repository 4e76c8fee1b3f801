// The spin-wait hint: lets the core's sibling thread run and saves power while a loop polls.
#pragma once

namespace seam::comm {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace seam::comm
