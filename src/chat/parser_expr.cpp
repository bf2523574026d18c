// Expression half of the parser; see parser.h for the grammar.
#include <algorithm>
#include <fmt/format.h>

#include "chat/parser.h"
#include "chat/parser_impl.h"

namespace cohort::chat::detail {

ExprPtr make_expr(ExprKind kind, SourcePos pos) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->pos = pos;
  return e;
}

ExprPtr Parser::seal(ExprPtr e) const {
  int h = 0;
  for (const auto& a : e->args) {
    if (a) h = std::max(h, a->height);
  }
  for (const auto& [k, v] : e->kwargs) h = std::max(h, v->height);
  e->height = h + 1;
  if (e->height > kMaxNesting) {
    throw located_error(ErrorKind::Limit, e->pos,
                        fmt::format("expression nests deeper than {} levels", kMaxNesting));
  }
  return e;
}

ExprPtr Parser::binary(std::string op, ExprPtr left, ExprPtr right, SourcePos pos) {
  auto e = make_expr(ExprKind::Binary, pos);
  e->name = std::move(op);
  e->args.push_back(std::move(left));
  e->args.push_back(std::move(right));
  return seal(std::move(e));
}

bool Parser::at_tuple_end(const std::vector<std::string>& extra_end) const {
  const Token& t = cur();
  if (t.type == TokenType::VariableEnd || t.type == TokenType::BlockEnd || t.type == TokenType::End) return true;
  if (at_op(")")) return true;
  return t.type == TokenType::Name && std::find(extra_end.begin(), extra_end.end(), t.value) != extra_end.end();
}

ExprPtr Parser::parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                            bool explicit_parentheses) {
  const SourcePos pos = cur().pos;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (at_tuple_end(extra_end)) break;
    items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
    if (at_op(",")) {
      is_tuple = true;
    } else {
      break;
    }
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items[0]);
    if (!explicit_parentheses) fail(cur(), "expected an expression, got " + describe(cur()));
  }
  auto e = make_expr(ExprKind::Tuple, pos);
  e->args = std::move(items);
  return seal(std::move(e));
}

ExprPtr Parser::parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

ExprPtr Parser::parse_condexpr() {
  Nest nest(*this);
  SourcePos pos = cur().pos;
  ExprPtr expr = parse_or();
  while (at_name("if")) {
    advance();
    auto e = make_expr(ExprKind::Condition, pos);
    ExprPtr test = parse_or();
    ExprPtr otherwise;
    if (at_name("else")) {
      advance();
      otherwise = parse_condexpr();
    }
    e->args.push_back(std::move(test));
    e->args.push_back(std::move(expr));
    e->args.push_back(std::move(otherwise));
    expr = seal(std::move(e));
    pos = cur().pos;
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (at_name("or")) {
    const SourcePos pos = advance().pos;
    left = binary("or", std::move(left), parse_and(), pos);
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (at_name("and")) {
    const SourcePos pos = advance().pos;
    left = binary("and", std::move(left), parse_not(), pos);
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (at_name("not")) {
    Nest nest(*this);
    auto e = make_expr(ExprKind::Unary, advance().pos);
    e->name = "not";
    e->args.push_back(parse_not());
    return seal(std::move(e));
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const SourcePos pos = cur().pos;
  ExprPtr first = parse_math1();
  auto e = make_expr(ExprKind::Compare, pos);
  e->args.push_back(std::move(first));
  while (true) {
    static constexpr const char* kOps[] = {"==", "!=", "<", "<=", ">", ">="};
    bool matched = false;
    for (const char* op : kOps) {
      if (at_op(op)) {
        advance();
        e->ops.emplace_back(op);
        matched = true;
        break;
      }
    }
    if (!matched) {
      if (at_name("in")) {
        advance();
        e->ops.emplace_back("in");
      } else if (at_name("not") && peek().type == TokenType::Name && peek().value == "in") {
        advance();
        advance();
        e->ops.emplace_back("not in");
      } else {
        break;
      }
    }
    e->args.push_back(parse_math1());
  }
  if (e->ops.empty()) return std::move(e->args[0]);
  return seal(std::move(e));
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (at_op("+") || at_op("-")) {
    const Token& t = advance();
    left = binary(t.value, std::move(left), parse_concat(), t.pos);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (at_op("~")) {
    const SourcePos pos = advance().pos;
    left = binary("~", std::move(left), parse_math2(), pos);
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (at_op("*") || at_op("/") || at_op("//") || at_op("%")) {
    const Token& t = advance();
    left = binary(t.value, std::move(left), parse_pow(), t.pos);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (at_op("**")) {
    const SourcePos pos = advance().pos;
    left = binary("**", std::move(left), parse_unary(true), pos);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  Nest nest(*this);
  ExprPtr node;
  if (at_op("-") || at_op("+")) {
    const Token& t = advance();
    node = make_expr(ExprKind::Unary, t.pos);
    node->name = t.value;
    node->args.push_back(parse_unary(false));
    node = seal(std::move(node));
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_expr(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  Nest nest(*this);
  const Token& t = cur();
  const SourcePos pos = t.pos;
  if (t.type == TokenType::Name) {
    auto e = make_expr(ExprKind::Literal, pos);
    const std::string& v = t.value;
    if (v == "true" || v == "True" || v == "false" || v == "False") {
      e->value = Value::boolean(v == "true" || v == "True");
    } else if (v == "none" || v == "None") {
      e->value = Value::none();
    } else {
      e->kind = ExprKind::Name;
      e->name = v;
    }
    advance();
    return e;
  }
  if (t.type == TokenType::String) {
    std::string s;
    while (cur().type == TokenType::String) s += advance().value;
    auto e = make_expr(ExprKind::Literal, pos);
    e->value = Value::string(std::move(s));
    return e;
  }
  if (t.type == TokenType::Integer || t.type == TokenType::Float) {
    auto e = make_expr(ExprKind::Literal, pos);
    e->value = t.type == TokenType::Integer ? Value::integer(t.int_value) : Value::number(t.float_value);
    advance();
    return e;
  }
  if (at_op("(")) {
    advance();
    ExprPtr e = parse_tuple(false, true, {}, true);
    expect_op(")");
    return e;
  }
  if (at_op("[")) return parse_list();
  if (at_op("{")) return parse_dict();
  unexpected(t);
}

ExprPtr Parser::parse_list() {
  auto e = make_expr(ExprKind::List, advance().pos);
  while (!at_op("]")) {
    if (!e->args.empty()) expect_op(",");
    if (at_op("]")) break;
    e->args.push_back(parse_expression());
  }
  expect_op("]");
  return seal(std::move(e));
}

ExprPtr Parser::parse_dict() {
  auto e = make_expr(ExprKind::Dict, advance().pos);
  while (!at_op("}")) {
    if (!e->args.empty()) expect_op(",");
    if (at_op("}")) break;
    e->args.push_back(parse_expression());
    expect_op(":");
    e->args.push_back(parse_expression());
  }
  expect_op("}");
  return seal(std::move(e));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (at_op(".") || at_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (at_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (at_op("|")) {
      node = parse_filter(std::move(node));
    } else if (at_name("is")) {
      node = parse_test(std::move(node));
    } else if (at_op("(")) {
      node = parse_call(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& t = advance();
  if (t.value == ".") {
    const Token& attr = cur();
    if (attr.type == TokenType::Name) {
      auto e = make_expr(ExprKind::Attr, t.pos);
      e->name = advance().value;
      e->args.push_back(std::move(node));
      return seal(std::move(e));
    }
    if (attr.type != TokenType::Integer) fail(attr, "expected a name or number after '.'");
    auto index = make_expr(ExprKind::Literal, attr.pos);
    index->value = Value::integer(advance().int_value);
    auto e = make_expr(ExprKind::Item, t.pos);
    e->args.push_back(std::move(node));
    e->args.push_back(std::move(index));
    return seal(std::move(e));
  }
  Nest nest(*this);
  std::vector<ExprPtr> subs;
  while (!at_op("]")) {
    if (!subs.empty()) expect_op(",");
    subs.push_back(parse_subscribed());
  }
  expect_op("]");
  if (subs.size() == 1 && subs[0]->kind == ExprKind::Slice && subs[0]->args.size() == 3) {
    ExprPtr slice = std::move(subs[0]);
    slice->args.insert(slice->args.begin(), std::move(node));
    slice->pos = t.pos;
    return seal(std::move(slice));
  }
  ExprPtr index;
  if (subs.size() == 1) {
    index = std::move(subs[0]);
  } else {
    index = make_expr(ExprKind::Tuple, t.pos);
    index->args = std::move(subs);
    index = seal(std::move(index));
  }
  if (index->kind == ExprKind::Slice) {
    throw located_error(ErrorKind::Unsupported, t.pos, "slices inside tuples are not supported");
  }
  auto e = make_expr(ExprKind::Item, t.pos);
  e->args.push_back(std::move(node));
  e->args.push_back(std::move(index));
  return seal(std::move(e));
}

// One subscript: an expression or a slice a:b:c (returned as a Slice whose
// three args are the bounds, any of them null).
ExprPtr Parser::parse_subscribed() {
  const SourcePos pos = cur().pos;
  std::vector<ExprPtr> bounds;
  if (at_op(":")) {
    advance();
    bounds.push_back(nullptr);
  } else {
    ExprPtr node = parse_expression();
    if (!at_op(":")) return node;
    advance();
    bounds.push_back(std::move(node));
  }
  auto bound_or_null = [&]() -> ExprPtr {
    if (at_op(":") || at_op("]") || at_op(",")) return nullptr;
    return parse_expression();
  };
  bounds.push_back(bound_or_null());
  if (at_op(":")) {
    advance();
    bounds.push_back(bound_or_null());
  } else {
    bounds.push_back(nullptr);
  }
  auto e = make_expr(ExprKind::Slice, pos);
  e->args = std::move(bounds);
  return e;
}

void Parser::parse_call_args(std::vector<ExprPtr>& args, std::vector<std::pair<std::string, ExprPtr>>& kwargs) {
  Nest nest(*this);
  expect_op("(");
  bool require_comma = false;
  while (!at_op(")")) {
    if (require_comma) {
      expect_op(",");
      if (at_op(")")) break;
    }
    if (at_op("*") || at_op("**")) {
      throw located_error(ErrorKind::Unsupported, cur().pos, "*args and **kwargs in calls are not supported");
    }
    if (cur().type == TokenType::Name && peek_op("=")) {
      std::string key = advance().value;
      advance();
      kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!kwargs.empty()) fail(cur(), "positional argument follows keyword argument");
      args.push_back(parse_expression());
    }
    require_comma = true;
  }
  advance();
}

ExprPtr Parser::parse_call(ExprPtr node) {
  auto e = make_expr(ExprKind::Call, node->pos);
  e->args.push_back(std::move(node));
  parse_call_args(e->args, e->kwargs);
  return seal(std::move(e));
}

ExprPtr Parser::parse_filter(ExprPtr node) {
  advance();
  FilterCall f = parse_filter_call();
  auto e = make_expr(ExprKind::Filter, f.pos);
  e->name = std::move(f.name);
  e->args.push_back(std::move(node));
  for (auto& a : f.args) e->args.push_back(std::move(a));
  e->kwargs = std::move(f.kwargs);
  return seal(std::move(e));
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const SourcePos pos = advance().pos;
  bool negated = false;
  if (at_name("not")) {
    advance();
    negated = true;
  }
  auto e = make_expr(ExprKind::Test, cur().pos);
  e->name = expect_name();
  while (at_op(".")) {
    advance();
    e->name += '.';
    e->name += expect_name();
  }
  e->args.push_back(std::move(node));
  const Token& t = cur();
  const bool arg_start = t.type == TokenType::Name || t.type == TokenType::String ||
                         t.type == TokenType::Integer || t.type == TokenType::Float ||
                         at_op("(") || at_op("[") || at_op("{");
  if (at_op("(")) {
    parse_call_args(e->args, e->kwargs);
  } else if (arg_start && !at_name("else") && !at_name("or") && !at_name("and")) {
    if (at_name("is")) fail(t, "you cannot chain multiple tests with 'is'");
    e->args.push_back(parse_postfix(parse_primary()));
  }
  e = seal(std::move(e));
  if (!negated) return e;
  auto n = make_expr(ExprKind::Unary, pos);
  n->name = "not";
  n->args.push_back(std::move(e));
  return seal(std::move(n));
}

}  // namespace cohort::chat::detail
