#pragma once
// Storage reuse for kernel outputs within one VM function: an output whose last use has passed
// gives its storage slot to a later output of the same dtype and shape (same byte size; NDArray
// cannot re-view a buffer, so the dtype and shape must match too). Assumes forward-only control
// flow (Bytecode.h). Only outputs with a fully known static shape that are read by kernels alone
// (never moved, returned, stored, viewed by ReshapeTensor or passed to a call) are planned; each gets an
// AllocTensor before its InvokeKernel, and the VM copies the kernel's result into that storage.

#include "backends/relay/vm/Bytecode.h"

namespace grove::relay::vm {

void plan_memory(VMFunction &fn);

}  // namespace grove::relay::vm
