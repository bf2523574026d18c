// Expression half of the evaluator.
#include <fmt/format.h>

#include "chat/evaluator.h"
#include "chat/filters.h"
#include "chat/ops.h"

namespace cohort::chat {

Value Evaluator::eval(const Expr& e) {
  try {
    Nested nested(*this);
    return eval_node(e);
  } catch (Fault& f) {
    if (!f.located) {
      f.located = true;
      f.pos = e.pos;
    }
    throw;
  }
}

Value Evaluator::eval_node(const Expr& e) {
  switch (e.kind) {
    case ExprKind::Literal: return e.value;
    case ExprKind::Name: {
      if (const Value* v = scope_->find(e.name)) return *v;
      return Value::undefined(fmt::format("'{}' is undefined", e.name));
    }
    case ExprKind::List:
    case ExprKind::Tuple: return eval_sequence(e);
    case ExprKind::Dict: return eval_dict(e);
    case ExprKind::Attr: return get_attr(ctx_, eval(*e.args[0]), e.name);
    case ExprKind::Item: {
      const Value obj = eval(*e.args[0]);
      return get_item(ctx_, obj, eval(*e.args[1]));
    }
    case ExprKind::Slice: {
      const Value obj = eval(*e.args[0]);
      Value bounds[3];
      for (size_t i = 0; i < 3; ++i) {
        if (e.args[i + 1]) bounds[i] = eval(*e.args[i + 1]);
      }
      auto bound = [&](size_t i) { return e.args[i + 1] ? &bounds[i] : nullptr; };
      return slice_value(obj, bound(0), bound(1), bound(2));
    }
    case ExprKind::Call: return eval_call(e);
    case ExprKind::Filter: {
      const Value input = eval(*e.args[0]);
      return apply_filter(ctx_, e.name, input, eval_args(e, 1));
    }
    case ExprKind::Test: {
      const Value input = eval(*e.args[0]);
      return Value::boolean(apply_test(ctx_, e.name, input, eval_args(e, 1)));
    }
    case ExprKind::Unary: {
      const Value v = eval(*e.args[0]);
      if (e.name == "not") return Value::boolean(!truthy(v));
      return unary_op(e.name, v);
    }
    case ExprKind::Binary: return eval_logic(e);
    case ExprKind::Compare: return eval_compare(e);
    case ExprKind::Condition: {
      if (truthy(eval(*e.args[0]))) return eval(*e.args[1]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined(fmt::format(
          "the inline if-expression on line {} evaluated to false and no else section was defined.", e.pos.line));
    }
  }
  return Value();
}

Value Evaluator::eval_sequence(const Expr& e) {
  std::vector<Value> items;
  items.reserve(e.args.size());
  for (const ExprPtr& a : e.args) items.push_back(eval(*a));
  ctx_.charge(items.size() * 32);
  return Value::list(std::move(items), e.kind == ExprKind::Tuple ? SeqKind::Tuple : SeqKind::List);
}

Value Evaluator::eval_dict(const Expr& e) {
  DictData d;
  for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
    Value key = eval(*e.args[i]);
    if (key.is_list() && key.list().kind != SeqKind::Tuple && key.list().kind != SeqKind::Range) {
      runtime_fault(fmt::format("unhashable type: '{}'", type_name(key)));
    }
    if (key.is_dict() || key.is_undefined()) runtime_fault(fmt::format("unhashable type: '{}'", type_name(key)));
    d.set(key, eval(*e.args[i + 1]));
  }
  ctx_.charge(d.size() * 64);
  return Value::dict(std::move(d));
}

// `and` and `or` return one of their operands, evaluating the right one only
// when needed; the other binary operators evaluate both.
Value Evaluator::eval_logic(const Expr& e) {
  Value left = eval(*e.args[0]);
  if (e.name == "and") return truthy(left) ? eval(*e.args[1]) : left;
  if (e.name == "or") return truthy(left) ? left : eval(*e.args[1]);
  const Value right = eval(*e.args[1]);
  return binary_op(ctx_, e.name, left, right);
}

Value Evaluator::eval_compare(const Expr& e) {
  Value left = eval(*e.args[0]);
  for (size_t i = 0; i < e.ops.size(); ++i) {
    Value right = eval(*e.args[i + 1]);
    if (!compare_op(e.ops[i], left, right)) return Value::boolean(false);
    left = std::move(right);
  }
  return Value::boolean(true);
}

CallArgs Evaluator::eval_args(const std::vector<ExprPtr>& args,
                              const std::vector<std::pair<std::string, ExprPtr>>& kwargs) {
  CallArgs out;
  for (const ExprPtr& a : args) out.positional.push_back(eval(*a));
  for (const auto& [k, v] : kwargs) out.keyword.emplace_back(k, eval(*v));
  return out;
}

CallArgs Evaluator::eval_args(const Expr& e, size_t first) {
  CallArgs out;
  for (size_t i = first; i < e.args.size(); ++i) out.positional.push_back(eval(*e.args[i]));
  for (const auto& [k, v] : e.kwargs) out.keyword.emplace_back(k, eval(*v));
  return out;
}

Value Evaluator::eval_call(const Expr& e) {
  const Value callee = eval(*e.args[0]);
  CallArgs args = eval_args(e, 1);
  if (callee.is_function()) return callee.function().call(args);
  if (callee.is_undefined()) fail_undefined(callee);
  runtime_fault(fmt::format("'{}' object is not callable", type_name(callee)));
}

}  // namespace cohort::chat
