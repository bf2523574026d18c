// Internal to the parser: the Parser class shared by parser.cpp (statements)
// and parser_expr.cpp (expressions). Not part of the chat/ API.
#pragma once

#include <string>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"

namespace cohort::chat::detail {

class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : tokens_(std::move(tokens)) {}

  Body parse_all();

 private:
  // Raises the nesting count for the lifetime of the guard.
  class Nest {
   public:
    explicit Nest(Parser& p);
    ~Nest() { --p_.depth_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

   private:
    Parser& p_;
  };

  // Token stream.
  const Token& cur() const { return tokens_[i_]; }
  const Token& peek() const { return tokens_[i_ + 1 < tokens_.size() ? i_ + 1 : i_]; }
  const Token& advance();
  bool at_op(const char* op) const;
  bool at_name(const char* name) const;
  bool peek_op(const char* op) const;
  void expect_op(const char* op);
  std::string expect_name();
  void expect_name(const char* name);
  void expect_block_end();
  [[noreturn]] void fail(const Token& at, const std::string& what) const;
  [[noreturn]] void unexpected(const Token& t) const;
  static std::string describe(const Token& t);

  // Statements (parser.cpp).
  Body subparse(const std::vector<std::string>& end_tags);
  NodePtr parse_statement();
  NodePtr parse_for(SourcePos pos);
  NodePtr parse_if(SourcePos pos);
  NodePtr parse_set(SourcePos pos);
  NodePtr parse_macro(SourcePos pos);
  NodePtr parse_filter_block(SourcePos pos);
  NodePtr parse_with(SourcePos pos);
  Body parse_body_until(const char* end_tag);
  Target parse_assign_target(bool with_namespace, const std::vector<std::string>& extra_end);
  FilterCall parse_filter_call();

  // Expressions (parser_expr.cpp).
  bool at_tuple_end(const std::vector<std::string>& extra_end) const;
  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<std::string>& extra_end,
                      bool explicit_parentheses);
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_list();
  ExprPtr parse_dict();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  ExprPtr parse_call(ExprPtr node);
  void parse_call_args(std::vector<ExprPtr>& args, std::vector<std::pair<std::string, ExprPtr>>& kwargs);
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, SourcePos pos);
  // Computes the height of a finished node and enforces the nesting limit.
  ExprPtr seal(ExprPtr e) const;

  std::vector<Token> tokens_;
  size_t i_ = 0;
  int depth_ = 0;
  int loop_depth_ = 0;  // for break/continue
};

ExprPtr make_expr(ExprKind kind, SourcePos pos);

}  // namespace cohort::chat::detail
