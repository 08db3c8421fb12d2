#include "tools/Report.h"

#include <iostream>

namespace grove::tool {

void print_user_error(const std::string &message) {
  std::cerr << (message.find(": error: ") == std::string::npos ? "grove: error: " : "grove: ") << message
            << "\n";
}

void print_notes(const std::vector<std::string> &notes) {
  for (const std::string &note : notes) std::cerr << "grove: note: " << note << "\n";
}

}  // namespace grove::tool
