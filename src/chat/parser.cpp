#include "chat/parser.h"

#include <algorithm>
#include <fmt/format.h>

#include "chat/parser_impl.h"

namespace cohort::chat {
namespace detail {
namespace {

// Tags that are valid Jinja but that this engine does not implement.
constexpr const char* kUnsupportedTags[] = {"call", "block", "extends", "include", "import",
                                            "from", "autoescape", "do", "trans", "endblock"};

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

Parser::Nest::Nest(Parser& p) : p_(p) {
  if (++p_.depth_ > kMaxNesting) {
    --p_.depth_;
    throw located_error(ErrorKind::Limit, p_.cur().pos,
                        fmt::format("template nests deeper than {} levels", kMaxNesting));
  }
}

const Token& Parser::advance() {
  const Token& t = tokens_[i_];
  if (i_ + 1 < tokens_.size()) ++i_;
  return t;
}

bool Parser::at_op(const char* op) const {
  return cur().type == TokenType::Operator && cur().value == op;
}

bool Parser::at_name(const char* name) const {
  return cur().type == TokenType::Name && cur().value == name;
}

bool Parser::peek_op(const char* op) const {
  return peek().type == TokenType::Operator && peek().value == op;
}

std::string Parser::describe(const Token& t) {
  switch (t.type) {
    case TokenType::Data: return "template data";
    case TokenType::VariableBegin: return "'{{'";
    case TokenType::VariableEnd: return "end of print statement '}}'";
    case TokenType::BlockBegin: return "'{%'";
    case TokenType::BlockEnd: return "end of statement block '%}'";
    case TokenType::End: return "end of template";
    case TokenType::String: return "string literal";
    case TokenType::Integer:
    case TokenType::Float: return fmt::format("number {}", t.value);
    default: return fmt::format("'{}'", t.value);
  }
}

void Parser::fail(const Token& at, const std::string& what) const {
  throw located_error(ErrorKind::Syntax, at.pos, what);
}

void Parser::unexpected(const Token& t) const { fail(t, "unexpected " + describe(t)); }

void Parser::expect_op(const char* op) {
  if (!at_op(op)) fail(cur(), fmt::format("expected '{}', got {}", op, describe(cur())));
  advance();
}

std::string Parser::expect_name() {
  if (cur().type != TokenType::Name) fail(cur(), "expected a name, got " + describe(cur()));
  return advance().value;
}

void Parser::expect_name(const char* name) {
  if (!at_name(name)) fail(cur(), fmt::format("expected '{}', got {}", name, describe(cur())));
  advance();
}

void Parser::expect_block_end() {
  if (cur().type != TokenType::BlockEnd) {
    fail(cur(), "expected end of statement block '%}', got " + describe(cur()));
  }
  advance();
}

Body Parser::parse_all() {
  Body body = subparse({});
  return body;
}

Body Parser::subparse(const std::vector<std::string>& end_tags) {
  Nest nest(*this);
  Body body;
  while (true) {
    const Token& t = cur();
    if (t.type == TokenType::Data) {
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::Text;
      n->pos = t.pos;
      n->text = advance().value;
      body.push_back(std::move(n));
    } else if (t.type == TokenType::VariableBegin) {
      auto n = std::make_unique<Node>();
      n->kind = NodeKind::Output;
      n->pos = advance().pos;
      n->expr = parse_tuple(false, true, {}, false);
      if (cur().type != TokenType::VariableEnd) {
        fail(cur(), "expected end of print statement '}}', got " + describe(cur()));
      }
      advance();
      body.push_back(std::move(n));
    } else if (t.type == TokenType::BlockBegin) {
      advance();
      if (cur().type == TokenType::Name && contains(end_tags, cur().value)) return body;
      body.push_back(parse_statement());
    } else if (t.type == TokenType::End) {
      if (!end_tags.empty()) {
        fail(t, fmt::format("unexpected end of template: a block is not closed (expected '{}')",
                            fmt::join(end_tags, "' or '")));
      }
      return body;
    } else {
      unexpected(t);
    }
  }
}

NodePtr Parser::parse_statement() {
  const Token& t = cur();
  if (t.type != TokenType::Name) fail(t, "tag name expected, got " + describe(t));
  const std::string tag = t.value;
  const SourcePos pos = t.pos;
  if (tag == "for") return parse_for(pos);
  if (tag == "if") return parse_if(pos);
  if (tag == "set") return parse_set(pos);
  if (tag == "macro") return parse_macro(pos);
  if (tag == "filter") return parse_filter_block(pos);
  if (tag == "with") return parse_with(pos);
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) fail(t, fmt::format("'{}' outside of a loop", tag));
    advance();
    expect_block_end();
    auto n = std::make_unique<Node>();
    n->kind = tag == "break" ? NodeKind::Break : NodeKind::Continue;
    n->pos = pos;
    return n;
  }
  if (tag == "generation") {
    advance();
    expect_block_end();
    auto n = std::make_unique<Node>();
    n->kind = NodeKind::Generation;
    n->pos = pos;
    n->body = parse_body_until("endgeneration");
    return n;
  }
  for (const char* u : kUnsupportedTags) {
    if (tag == u) throw located_error(ErrorKind::Unsupported, pos, fmt::format("unsupported tag '{}'", tag));
  }
  fail(t, fmt::format("unknown tag '{}'", tag));
}

// Body up to {% end_tag %}, consuming the end tag.
Body Parser::parse_body_until(const char* end_tag) {
  Body body = subparse({end_tag});
  advance();
  expect_block_end();
  return body;
}

NodePtr Parser::parse_for(SourcePos pos) {
  advance();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::For;
  n->pos = pos;
  n->target = parse_assign_target(false, {"in"});
  expect_name("in");
  n->expr = parse_tuple(false, false, {"recursive"}, false);
  if (at_name("if")) {
    advance();
    n->filter = parse_expression();
  }
  if (at_name("recursive")) {
    throw located_error(ErrorKind::Unsupported, cur().pos, "recursive loops are not supported");
  }
  expect_block_end();
  ++loop_depth_;
  n->body = subparse({"endfor", "else"});
  --loop_depth_;
  if (advance().value == "else") {
    expect_block_end();
    n->else_body = parse_body_until("endfor");
  } else {
    expect_block_end();
  }
  return n;
}

NodePtr Parser::parse_if(SourcePos pos) {
  advance();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::If;
  n->pos = pos;
  while (true) {
    ExprPtr test = parse_tuple(false, false, {}, false);
    expect_block_end();
    Body body = subparse({"elif", "else", "endif"});
    n->branches.emplace_back(std::move(test), std::move(body));
    const std::string tag = advance().value;
    if (tag == "elif") continue;
    if (tag == "else") {
      expect_block_end();
      n->else_body = parse_body_until("endif");
    } else {
      expect_block_end();
    }
    return n;
  }
}

NodePtr Parser::parse_set(SourcePos pos) {
  advance();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Set;
  n->pos = pos;
  n->target = parse_assign_target(true, {});
  if (at_op("=")) {
    advance();
    n->expr = parse_tuple(false, true, {}, false);
    expect_block_end();
    return n;
  }
  while (at_op("|")) {
    advance();
    n->filters.push_back(parse_filter_call());
  }
  expect_block_end();
  n->body = parse_body_until("endset");
  return n;
}

NodePtr Parser::parse_macro(SourcePos pos) {
  advance();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::Macro;
  n->pos = pos;
  n->text = expect_name();
  expect_op("(");
  while (!at_op(")")) {
    if (!n->params.empty()) expect_op(",");
    if (at_op(")")) break;
    MacroParam p;
    p.name = expect_name();
    if (at_op("=")) {
      advance();
      p.default_value = parse_expression();
    }
    n->params.push_back(std::move(p));
  }
  advance();
  expect_block_end();
  const int saved = loop_depth_;
  loop_depth_ = 0;
  n->body = parse_body_until("endmacro");
  loop_depth_ = saved;
  return n;
}

FilterCall Parser::parse_filter_call() {
  FilterCall f;
  f.pos = cur().pos;
  f.name = expect_name();
  while (at_op(".")) {
    advance();
    f.name += '.';
    f.name += expect_name();
  }
  if (at_op("(")) parse_call_args(f.args, f.kwargs);
  return f;
}

NodePtr Parser::parse_filter_block(SourcePos pos) {
  advance();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::FilterBlock;
  n->pos = pos;
  n->filters.push_back(parse_filter_call());
  while (at_op("|")) {
    advance();
    n->filters.push_back(parse_filter_call());
  }
  expect_block_end();
  n->body = parse_body_until("endfilter");
  return n;
}

NodePtr Parser::parse_with(SourcePos pos) {
  advance();
  auto n = std::make_unique<Node>();
  n->kind = NodeKind::With;
  n->pos = pos;
  while (cur().type != TokenType::BlockEnd) {
    if (!n->assigns.empty()) expect_op(",");
    Target t = parse_assign_target(false, {});
    expect_op("=");
    n->assigns.emplace_back(std::move(t), parse_expression());
  }
  advance();
  n->body = parse_body_until("endwith");
  return n;
}

Target Parser::parse_assign_target(bool with_namespace, const std::vector<std::string>& extra_end) {
  Target t;
  if (with_namespace && cur().type == TokenType::Name && peek_op(".")) {
    t.names.push_back(advance().value);
    advance();
    t.attr = expect_name();
    return t;
  }
  const Token& start = cur();
  ExprPtr e = parse_tuple(true, true, extra_end, false);
  auto add_name = [&](const Expr& x) {
    if (x.kind != ExprKind::Name) fail(start, "cannot assign to this expression");
    t.names.push_back(x.name);
  };
  if (e->kind == ExprKind::Tuple) {
    t.unpack = true;
    for (const auto& item : e->args) add_name(*item);
  } else {
    add_name(*e);
  }
  return t;
}

}  // namespace detail

Body parse_template(std::string_view source) {
  detail::Parser parser(tokenize(source));
  return parser.parse_all();
}

}  // namespace cohort::chat
