#include "frontend/dsl/Frontend.h"

#include <fstream>
#include <sstream>

#include "frontend/dsl/Check.h"
#include "frontend/dsl/Lexer.h"
#include "frontend/dsl/Messages.h"
#include "frontend/dsl/Parser.h"
#include "frontend/dsl/ToILIR.h"
#include "ilir/Verifier.h"

namespace grove::dsl {

ilir::Program parse_model(const std::string &text, const std::string &filename) {
  SourceFile source(filename, text);
  std::vector<Token> tokens = lex(source);
  return lower_model(parse(source, tokens), source);
}

ilir::Program lower_model(ModelAst model, const SourceFile &source) {
  check(source, model);
  ilir::Program program = to_ilir(model);
  ilir::verify(program);
  return program;
}

ilir::Program parse_model_file(const std::string &path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) user_error(msg::kCannotRead, path);
  std::ostringstream text;
  text << file.rdbuf();
  if (file.bad()) user_error(msg::kCannotRead, path);
  return parse_model(text.str(), path);
}

}  // namespace grove::dsl
