#pragma once
// Every user-facing message of the model ABI (ModelAbi.h): a compiled model's description read back.

namespace grove::abi_messages {

inline constexpr char kAbiNotJson[] = "{}: the compiled model's description is not a JSON object";
inline constexpr char kAbiVersion[] =
    "{}: the compiled model was written for grove ABI version {}; this runtime reads version {}: recompile "
    "it "
    "with this grove's `grove compile`";
inline constexpr char kAbiBadJson[] = "{}: the compiled model's description is malformed: {}";
inline constexpr char kAbiBadField[] = "{}: the compiled model's description has a bad '{}' ({})";

}  // namespace grove::abi_messages
