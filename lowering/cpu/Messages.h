#pragma once
// Every user-facing message of the CPU emitter, in one place.

namespace grove::lowering_messages {

inline constexpr char kCannotWrite[] = "{}: cannot write the generated code: {}";
inline constexpr char kNoteBf16[] = "precision=bf16 does nothing here: {}; everything runs in fp32";
inline constexpr char kBf16Panel[] = "panel={} is not a multiple of the {} rows of one {}";
inline constexpr char kNoteAmxNodeBlock[] =
    "node_block={} is more than the {} rows of an AMX tile: the bf16 GEMMs run blocks of {} nodes";

}  // namespace grove::lowering_messages
