// Syntax tree of a parsed template.
//
// Expressions and statements are tagged nodes: `kind` says which fields are
// used (see the tables below). Every node carries its source position, used
// in error messages, and owns its children.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/template_error.h"
#include "chat/value.h"

namespace cohort::chat {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

enum class ExprKind {
  Literal,    // value
  Name,       // name
  List,       // args: items
  Tuple,      // args: items
  Dict,       // args: key0, value0, key1, value1, ...
  Attr,       // args[0].name
  Item,       // args[0][args[1]]
  Slice,      // args[0][args[1]:args[2]:args[3]]; a null arg is an omitted bound
  Call,       // args[0](args[1:], kwargs)
  Filter,     // args[0] | name(args[1:], kwargs)
  Test,       // args[0] is name(args[1:], kwargs)
  Unary,      // name ("not", "-", "+") args[0]
  Binary,     // args[0] name args[1]; name is the operator ("+", "and", "~", ...)
  Compare,    // args[0] ops[0] args[1] ops[1] args[2]...; ops in `ops`
  Condition,  // args[1] if args[0] else args[2]; args[2] null: no else
};

struct Expr {
  ExprKind kind = ExprKind::Literal;
  SourcePos pos;
  std::string name;
  Value value;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
  std::vector<std::string> ops;  // Compare only: "==", "!=", "<", "<=", ">", ">=", "in", "not in"
  int height = 1;                // of this subtree; the parser bounds it
};

struct Node;
using NodePtr = std::unique_ptr<Node>;
using Body = std::vector<NodePtr>;

// A filter applied to a block ({% filter f(x) %}, {% set v | f %}).
struct FilterCall {
  SourcePos pos;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

// An assignment target: names (one, or several to unpack), or `ns.attr`.
struct Target {
  std::vector<std::string> names;
  std::string attr;  // non-empty: names[0].attr
  bool unpack = false;
};

struct MacroParam {
  std::string name;
  ExprPtr default_value;  // null: Undefined when the caller omits it
};

enum class NodeKind {
  Text,      // text
  Output,    // {{ expr }}
  If,        // branches: (condition, body) for if and each elif; else_body
  For,       // for target in expr [if filter]: body, else: else_body
  Set,       // set target = expr | set target [| filters] body endset
  Macro,     // macro text(params): body
  FilterBlock,  // filter filters: body
  With,      // with assigns: body
  Break,
  Continue,
  Generation,  // transformers' {% generation %}: body renders as is
};

struct Node {
  NodeKind kind = NodeKind::Text;
  SourcePos pos;
  std::string text;
  ExprPtr expr;
  ExprPtr filter;  // For: the `if` condition
  Target target;
  std::vector<std::pair<Target, ExprPtr>> assigns;  // With
  std::vector<MacroParam> params;
  std::vector<FilterCall> filters;
  std::vector<std::pair<ExprPtr, Body>> branches;  // If
  Body body;
  Body else_body;
};

}  // namespace cohort::chat
