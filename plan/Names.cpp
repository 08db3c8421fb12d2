#include "plan/Names.h"

#include <fmt/format.h>

namespace grove::plan::names {

std::string param(const std::string &tensor) { return "p_" + tensor; }
std::string state(const std::string &tensor) { return "s_" + tensor; }
std::string temp(const std::string &tensor) { return "t_" + tensor; }
std::string saved(const std::string &tensor) { return "v_" + tensor; }
std::string gradient(const std::string &tensor) { return "g_" + tensor; }
std::string packed(int index) { return fmt::format("pk{}", index); }

}  // namespace grove::plan::names
