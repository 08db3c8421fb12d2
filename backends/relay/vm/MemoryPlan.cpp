#include "backends/relay/vm/MemoryPlan.h"

#include <map>
#include <unordered_map>
#include <utility>

namespace grove::relay::vm {

namespace {

struct Candidate {
  int def = -1;       // the InvokeKernel that writes it
  int last_use = -1;  // the last instruction that reads it (the def when none does)
  DType dtype = DType::Float32;
  Shape shape;
  bool escapes = false;
  int slot = -1;
};

bool fully_known(const Shape &shape) {
  for (int64_t d : shape)
    if (d < 0) return false;
  return true;
}

template <typename F>
void for_each_read(const Instruction &in, F f) {
  if (in.a >= 0) f(in.a);
  if (in.b >= 0) f(in.b);
  for (int r : in.args) f(r);
}

}  // namespace

// 1. Candidates: kernel outputs with a fully known tensor type.
// 2. Liveness: the last instruction reading each candidate; a read by anything but a kernel input
//    means the value escapes (it may outlive the frame's view of it) and is not planned. Jumps go
//    forward only, so on any path a register is never read after its last use in code order.
// 3. Greedy: walking the code, slots of candidates whose last use is this instruction are freed
//    (a kernel reads its inputs before the VM copies its outputs, so an output may take an input's
//    slot), then this instruction's outputs take a free slot of their dtype and shape or a new one.
// 4. Rewrite: AllocTensor before each planned InvokeKernel; jump targets renumbered.
void plan_memory(VMFunction &fn) {
  std::unordered_map<int, Candidate> cands;
  for (size_t i = 0; i < fn.code.size(); ++i) {
    const Instruction &in = fn.code[i];
    if (in.op != Opcode::InvokeKernel) continue;
    for (size_t j = 0; j < in.outs.size(); ++j) {
      const auto *t = in.out_types[j].as<TensorType>();
      if (t == nullptr || !fully_known(t->shape)) continue;
      cands[in.outs[j]] = Candidate{static_cast<int>(i), static_cast<int>(i), t->dtype, t->shape};
    }
  }
  if (cands.empty()) return;
  for (size_t i = 0; i < fn.code.size(); ++i) {
    const Instruction &in = fn.code[i];
    for_each_read(in, [&](int r) {
      auto c = cands.find(r);
      if (c == cands.end()) return;
      if (in.op != Opcode::InvokeKernel) c->second.escapes = true;
      c->second.last_use = std::max(c->second.last_use, static_cast<int>(i));
    });
  }
  std::unordered_map<int, std::vector<int>> dying;  // instruction -> candidates whose last use it is
  for (auto &[r, c] : cands)
    if (!c.escapes) dying[c.last_use].push_back(r);
  std::map<std::pair<DType, Shape>, std::vector<int>> free_slots;
  std::vector<Instruction> code;
  std::vector<int> new_index(fn.code.size() + 1);
  for (size_t i = 0; i < fn.code.size(); ++i) {
    const Instruction &in = fn.code[i];
    new_index[i] = static_cast<int>(code.size());
    if (in.op == Opcode::InvokeKernel) {
      for (int r : in.args) {
        auto c = cands.find(r);
        if (c == cands.end() || c->second.escapes || c->second.last_use != static_cast<int>(i) ||
            c->second.slot < 0)
          continue;
        free_slots[{c->second.dtype, c->second.shape}].push_back(c->second.slot);
        c->second.slot = -1;  // freed once even when passed twice
      }
      for (int r : in.outs) {
        auto c = cands.find(r);
        if (c == cands.end() || c->second.escapes) continue;
        std::vector<int> &free = free_slots[{c->second.dtype, c->second.shape}];
        if (free.empty()) {
          c->second.slot = fn.num_storage++;
        } else {
          c->second.slot = free.back();
          free.pop_back();
        }
        Instruction alloc{Opcode::AllocTensor};
        alloc.dst = r;
        alloc.index = c->second.slot;
        alloc.dtype = c->second.dtype;
        alloc.shape = c->second.shape;
        alloc.span = in.span;
        code.push_back(std::move(alloc));
      }
      // An output nothing reads gives its slot back at once.
      for (int r : in.outs) {
        auto c = cands.find(r);
        if (c == cands.end() || c->second.escapes || c->second.last_use != static_cast<int>(i)) continue;
        free_slots[{c->second.dtype, c->second.shape}].push_back(c->second.slot);
        c->second.slot = -1;
      }
    }
    code.push_back(in);
  }
  new_index[fn.code.size()] = static_cast<int>(code.size());
  for (Instruction &in : code)
    if (in.op == Opcode::If || in.op == Opcode::Goto) in.target = new_index[in.target];
  fn.code = std::move(code);
}

}  // namespace grove::relay::vm
