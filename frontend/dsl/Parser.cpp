#include "frontend/dsl/Parser.h"

#include "frontend/dsl/Messages.h"

namespace grove::dsl {
namespace {

// Deeper nesting than this is surely not a model; the bound keeps the recursive descent (and the
// recursive walks of the tree after it) well within the C stack.
constexpr int kMaxDepth = 100;

// A recursive-descent parser, one method per grammar rule of docs/DSL.md:
//   file      := 'model' NAME decl* END
//   decl      := 'structure' NAME | ('param' | 'state') NAME dims
//              | ('leaf' | 'internal' | 'node') block | 'output' NAME
//              | 'schedule' '{' (NAME '=' value)* '}'          value := NAME | ['-'] INTEGER
//   dims      := '[' size (',' size)* ']'
//   size      := term (('+' | '-') term)*        term := factor ('*' factor)*, `3H` = 3 * H
//   block     := '{' (NAME '=' expr)* '}'
//   expr      := mul (('+' | '-') mul)*
//   mul       := unary (('*' | '/' | '@') unary)*
//   unary     := '-' unary | postfix
//   postfix   := primary ('[' index ']')*
//   index     := size ':' size | 'token' | 'left' | 'right' | 'pred0' | 'pred1' | 'prev' | NAME
//   primary   := NUMBER | NAME | NAME '(' expr ')' | '(' expr ')' | '[' expr (';' expr)* ']'
//              | 'sum' '(' NAME 'in' 'children' ')' expr
class Parser {
 public:
  Parser(const SourceFile &source, const std::vector<Token> &tokens) : source_(source), tokens_(tokens) {}

  ModelAst parse_file() {
    ModelAst model;
    if (peek().kind != Tok::Model) source_.error(peek().loc, msg::kModelFirst, found(peek()));
    model.loc = next().loc;
    model.name = expect(Tok::Ident, "after 'model'").text;
    while (peek().kind != Tok::End) parse_declaration(model);
    model.end_loc = peek().loc;
    return model;
  }

 private:
  const Token &peek(size_t ahead = 0) const {
    size_t index = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[index];
  }
  const Token &next() {
    const Token &token = peek();
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return token;
  }
  bool accept(Tok kind) {
    if (peek().kind != kind) return false;
    next();
    return true;
  }
  const Token &expect(Tok kind, const std::string &context) {
    if (peek().kind != kind)
      source_.error(peek().loc, msg::kExpected, describe(kind), context, found(peek()));
    return next();
  }
  static std::string found(const Token &token) {
    if (token.kind == Tok::Ident || token.kind == Tok::Number) return fmt::format("'{}'", token.text);
    return describe(token.kind);
  }

  void parse_declaration(ModelAst &model) {
    const Token &keyword = next();
    switch (keyword.kind) {
      case Tok::Structure: {
        if (model.structure)
          source_.error(keyword.loc, msg::kDuplicateSection, "structure", model.structure_loc.line);
        model.structure_loc = keyword.loc;
        const Token &kind = expect(Tok::Ident, "after 'structure'");
        if (kind.text == "binary_tree") {
          model.structure = ilir::StructureKind::BinaryTree;
        } else if (kind.text == "tree") {
          model.structure = ilir::StructureKind::Tree;
        } else if (kind.text == "dag") {
          model.structure = ilir::StructureKind::Dag;
        } else if (kind.text == "sequence") {
          model.structure = ilir::StructureKind::Sequence;
        } else {
          source_.error(kind.loc, msg::kUnknownStructure, kind.text);
        }
        return;
      }
      case Tok::Param:
      case Tok::State: {
        TensorDeclAst decl;
        decl.kind = keyword.kind == Tok::Param ? ilir::TensorKind::Param : ilir::TensorKind::State;
        const Token &name = expect(Tok::Ident, fmt::format("after '{}'", keyword.text));
        decl.name = name.text;
        decl.loc = name.loc;
        std::string context = fmt::format("of '{}'", decl.name);
        expect(Tok::LBracket, fmt::format("to open the dimensions {}", context));
        do {
          decl.dims.push_back(parse_size(fmt::format("as a dimension {}", context)));
        } while (accept(Tok::Comma));
        expect(Tok::RBracket, fmt::format("after the dimensions {}", context));
        model.tensors.push_back(std::move(decl));
        return;
      }
      case Tok::Leaf:
      case Tok::Internal: {
        bool leaf = keyword.kind == Tok::Leaf;
        std::optional<CaseAst> &slot = leaf ? model.leaf : model.internal;
        if (slot) source_.error(keyword.loc, msg::kDuplicateSection, keyword.text, slot->loc.line);
        slot = parse_case(leaf ? ilir::CaseKind::Leaf : ilir::CaseKind::Internal, keyword);
        return;
      }
      case Tok::Node: {
        if (model.node) source_.error(keyword.loc, msg::kDuplicateSection, "node", model.node->loc.line);
        model.node = parse_case(ilir::CaseKind::Leaf, keyword);
        model.node->node = true;
        return;
      }
      case Tok::Output: {
        if (model.output) source_.error(keyword.loc, msg::kDuplicateSection, "output", model.output_loc.line);
        const Token &name = expect(Tok::Ident, "after 'output'");
        model.output = name.text;
        model.output_loc = name.loc;
        return;
      }
      case Tok::Schedule: {
        if (model.schedule) {
          source_.error(keyword.loc, msg::kDuplicateSection, "schedule", model.schedule->loc.line);
        }
        model.schedule = parse_schedule(keyword);
        return;
      }
      case Tok::Model:
        source_.error(keyword.loc, msg::kDuplicateSection, "model", model.loc.line);
      default:
        source_.error(keyword.loc, msg::kExpectedDeclaration, found(keyword));
    }
  }

  CaseAst parse_case(ilir::CaseKind kind, const Token &keyword) {
    CaseAst result{kind, keyword.loc, {}};
    expect(Tok::LBrace, fmt::format("after '{}'", keyword.text));
    while (!accept(Tok::RBrace)) {
      if (peek().kind != Tok::Ident) {
        source_.error(peek().loc, msg::kExpected, "a statement 'name = expression' or '}'",
                      fmt::format("in the {} case", keyword.text), found(peek()));
      }
      const Token &target = next();
      expect(Tok::Assign, fmt::format("after '{}'", target.text));
      result.body.push_back(StatementAst{target.text, target.loc, parse_expr()});
    }
    return result;
  }

  // The values are passed on as written; only the scheduling layer knows which key takes what.
  ScheduleAst parse_schedule(const Token &keyword) {
    ScheduleAst result{keyword.loc, {}};
    expect(Tok::LBrace, "after 'schedule'");
    while (!accept(Tok::RBrace)) {
      if (peek().kind != Tok::Ident) {
        source_.error(peek().loc, msg::kExpected, "a setting 'key = value' or '}'", "in the schedule block",
                      found(peek()));
      }
      const Token &key = next();
      for (const ScheduleItemAst &item : result.items) {
        if (item.key == key.text) source_.error(key.loc, msg::kScheduleKeyTwice, key.text, item.loc.line);
      }
      expect(Tok::Assign, fmt::format("after schedule key '{}'", key.text));
      result.items.push_back(ScheduleItemAst{key.text, key.loc, parse_schedule_value(key.text)});
    }
    return result;
  }

  std::string parse_schedule_value(const std::string &key) {
    const Token &first = peek();
    bool negative = accept(Tok::Minus);
    const Token &value = next();
    bool name = value.kind == Tok::Ident && !negative;
    bool integer = value.kind == Tok::Number && value.is_integer && (!negative || value.glued);
    // `32H` lexes as 32 and a glued H: as a value it is neither a number nor a name.
    if (!(name || integer) || (peek().kind == Tok::Ident && peek().glued)) {
      std::string shown = negative ? fmt::format("'-' then {}", found(value)) : found(value);
      if (integer || name) shown = fmt::format("'{}{}{}'", negative ? "-" : "", value.text, peek().text);
      source_.error(first.loc, msg::kScheduleValue, key, shown);
    }
    return negative ? "-" + value.text : value.text;
  }

  // A size is linear: each term is a product of numbers and at most one variable.
  SizeAst parse_size(const std::string &context) {
    SizeAst size;
    size.loc = peek().loc;
    int sign = 1;
    while (true) {
      int64_t coefficient = sign;
      std::optional<std::pair<std::string, Loc>> var;
      do {
        const Token &token = next();
        if (token.kind == Tok::Number) {
          if (!token.is_integer) source_.error(token.loc, msg::kSizeNotInteger, token.text);
          coefficient *= token.integer;
          // `3H`: a variable glued to its coefficient.
          if (peek().kind == Tok::Ident && peek().glued) {
            if (var) source_.error(peek().loc, msg::kSizeNotLinear, var->first, peek().text);
            const Token &name = next();
            var = {name.text, name.loc};
          }
        } else if (token.kind == Tok::Ident) {
          if (var) source_.error(token.loc, msg::kSizeNotLinear, var->first, token.text);
          var = {token.text, token.loc};
        } else {
          source_.error(token.loc, msg::kExpectedSize, context, found(token));
        }
      } while (accept(Tok::Star));
      if (var) {
        size.value = size.value + Size::variable(var->first, coefficient);
        size.vars.push_back(*var);
      } else {
        size.value = size.value + Size::constant(coefficient);
      }
      if (accept(Tok::Plus)) {
        sign = 1;
      } else if (accept(Tok::Minus)) {
        sign = -1;
      } else {
        return size;
      }
    }
  }

  ExprPtr make(ExprAstKind kind, Loc loc) { return std::make_unique<ExprAst>(kind, loc); }

  ExprPtr make_binary(BinaryOp op, Loc loc, ExprPtr a, ExprPtr b) {
    ExprPtr e = make(ExprAstKind::Binary, loc);
    e->op = op;
    e->operands.push_back(std::move(a));
    e->operands.push_back(std::move(b));
    return e;
  }

  // Counts the nesting of parse_expr and parse_unary, the rules through which input can nest.
  class DepthGuard {
   public:
    DepthGuard(Parser &parser, Loc loc) : parser_(parser) {
      if (++parser_.depth_ > kMaxDepth) parser_.source_.error(loc, msg::kNestedTooDeep, kMaxDepth);
    }
    ~DepthGuard() { --parser_.depth_; }
    DepthGuard(const DepthGuard &) = delete;
    DepthGuard &operator=(const DepthGuard &) = delete;

   private:
    Parser &parser_;
  };

  ExprPtr parse_expr() {
    DepthGuard guard(*this, peek().loc);
    ExprPtr e = parse_mul();
    while (peek().kind == Tok::Plus || peek().kind == Tok::Minus) {
      const Token &op = next();
      e = make_binary(op.kind == Tok::Plus ? BinaryOp::Add : BinaryOp::Sub, op.loc, std::move(e),
                      parse_mul());
    }
    return e;
  }

  ExprPtr parse_mul() {
    ExprPtr e = parse_unary();
    while (peek().kind == Tok::Star || peek().kind == Tok::Slash || peek().kind == Tok::At) {
      const Token &op = next();
      BinaryOp kind = op.kind == Tok::Star    ? BinaryOp::Mul
                      : op.kind == Tok::Slash ? BinaryOp::Div
                                              : BinaryOp::MatMul;
      e = make_binary(kind, op.loc, std::move(e), parse_unary());
    }
    return e;
  }

  ExprPtr parse_unary() {
    DepthGuard guard(*this, peek().loc);
    if (peek().kind == Tok::Minus) {
      ExprPtr e = make(ExprAstKind::Neg, next().loc);
      e->operands.push_back(parse_unary());
      return e;
    }
    return parse_postfix();
  }

  ExprPtr parse_postfix() {
    ExprPtr e = parse_primary();
    while (peek().kind == Tok::LBracket) {
      Loc bracket = next().loc;
      e = parse_index(std::move(e), bracket);
      expect(Tok::RBracket, "to close '['");
    }
    return e;
  }

  ExprPtr parse_index(ExprPtr base, Loc bracket) {
    Tok kind = peek().kind;
    bool named_slot = kind == Tok::Token || kind == Tok::Left || kind == Tok::Right || kind == Tok::Pred0 ||
                      kind == Tok::Pred1 || kind == Tok::Prev ||
                      (kind == Tok::Ident && peek(1).kind == Tok::RBracket);
    if (named_slot) {
      // `E[token]`, `h[left]`, `h[k]` index a tensor by the structure, so they need a tensor name.
      const Token &slot = next();
      if (base->kind != ExprAstKind::Name) {
        source_.error(bracket, msg::kIndexNeedsName, slot.text, slot.text);
      }
      ExprPtr e = make(kind == Tok::Token ? ExprAstKind::Token : ExprAstKind::Child, base->loc);
      e->name = base->name;
      e->slot = kind == Tok::Left    ? ChildSlot::Left
                : kind == Tok::Right ? ChildSlot::Right
                : kind == Tok::Pred0 ? ChildSlot::Pred0
                : kind == Tok::Pred1 ? ChildSlot::Pred1
                : kind == Tok::Prev  ? ChildSlot::Prev
                                     : ChildSlot::Var;
      if (kind == Tok::Ident) e->child_var = slot.text;
      return e;
    }
    if (kind != Tok::Number && kind != Tok::Ident) source_.error(peek().loc, msg::kBadIndex, found(peek()));
    ExprPtr e = make(ExprAstKind::Slice, bracket);
    e->lo = parse_size("as the start of a slice");
    expect(Tok::Colon, "between the bounds of a slice 'lo:hi'");
    e->hi = parse_size("as the end of a slice");
    e->operands.push_back(std::move(base));
    return e;
  }

  ExprPtr parse_primary() {
    const Token &token = peek();
    switch (token.kind) {
      case Tok::Number: {
        ExprPtr e = make(ExprAstKind::Number, next().loc);
        e->number = token.number;
        return e;
      }
      case Tok::Ident: {
        next();
        if (!accept(Tok::LParen)) {
          ExprPtr e = make(ExprAstKind::Name, token.loc);
          e->name = token.text;
          return e;
        }
        ExprPtr e = make(ExprAstKind::Call, token.loc);
        if (token.text == "sigmoid") {
          e->function = Function::Sigmoid;
        } else if (token.text == "tanh") {
          e->function = Function::Tanh;
        } else if (token.text == "exp") {
          e->function = Function::Exp;
        } else if (token.text == "relu") {
          e->function = Function::Relu;
        } else {
          source_.error(token.loc, msg::kUnknownFunction, token.text);
        }
        e->operands.push_back(parse_expr());
        expect(Tok::RParen, fmt::format("to close the call of '{}'", token.text));
        return e;
      }
      case Tok::LParen: {
        next();
        ExprPtr e = parse_expr();
        expect(Tok::RParen, "to close '('");
        return e;
      }
      case Tok::LBracket: {
        ExprPtr e = make(ExprAstKind::Concat, next().loc);
        do {
          e->operands.push_back(parse_expr());
        } while (accept(Tok::Semi));
        expect(Tok::RBracket, "after the parts of '[a; b]'");
        return e;
      }
      case Tok::Sum: {
        ExprPtr e = make(ExprAstKind::SumChildren, next().loc);
        expect(Tok::LParen, "after 'sum'");
        e->name = expect(Tok::Ident, "in 'sum(k in children)'").text;
        expect(Tok::In, "in 'sum(k in children)'");
        expect(Tok::Children, "in 'sum(k in children)'");
        expect(Tok::RParen, "after 'sum(k in children'");
        e->operands.push_back(parse_expr());
        return e;
      }
      default:
        source_.error(token.loc, msg::kExpectedExpression, "here", found(token));
    }
  }

  const SourceFile &source_;
  const std::vector<Token> &tokens_;
  size_t pos_ = 0;
  int depth_ = 0;
};

}  // namespace

ModelAst parse(const SourceFile &source, const std::vector<Token> &tokens) {
  return Parser(source, tokens).parse_file();
}

}  // namespace grove::dsl
