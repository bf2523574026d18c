// Renders a parsed template: walks the syntax tree with jinja2's scoping.
//
// Scoping: `{% set %}` binds in the innermost scope. Each for-loop iteration
// and each macro call has its own scope, so assignments inside a loop body
// are not seen after the loop (use namespace() for that), while `if` blocks
// share the enclosing scope; reads fall through to enclosing scopes.
//
// One Evaluator renders one template once; it is not thread-safe, but any
// number of evaluators may render the same (immutable) tree concurrently.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "chat/ast.h"
#include "chat/eval_context.h"

namespace cohort::chat {

class Scope {
 public:
  explicit Scope(std::shared_ptr<Scope> parent) : parent_(std::move(parent)) {}
  // The nearest binding of `name`, or nullptr.
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value v) { vars_[name] = std::move(v); }

 private:
  std::shared_ptr<Scope> parent_;
  std::unordered_map<std::string, Value> vars_;
};

class Evaluator {
 public:
  explicit Evaluator(const RenderLimits& limits);
  ~Evaluator();
  Evaluator(const Evaluator&) = delete;
  Evaluator& operator=(const Evaluator&) = delete;

  // Renders `body` with the variables of `context` (and the built-in
  // globals range, dict, namespace, raise_exception, strftime_now).
  // Throws ChatTemplateError naming the line and column of the failure.
  std::string render(const Body& body, const DictData& context);

 private:
  enum class Flow { Normal, Break, Continue };

  // Counts nesting for the lifetime of the guard; faults past max_depth.
  class Nested {
   public:
    explicit Nested(Evaluator& e);
    ~Nested() { --e_.depth_; }
    Nested(const Nested&) = delete;
    Nested& operator=(const Nested&) = delete;

   private:
    Evaluator& e_;
  };

  Flow exec_body(const Body& body);
  Flow exec(const Node& n);
  Flow exec_node(const Node& n);
  Flow exec_if(const Node& n);
  Flow exec_for(const Node& n);
  void exec_set(const Node& n);
  void exec_macro(const Node& n);
  void exec_with(const Node& n);
  void assign(const Target& t, const Value& v);
  Value apply_filters(const std::vector<FilterCall>& filters, Value v);
  void write(std::string_view s);
  std::string capture(const Body& body);
  Value make_loop(const std::vector<Value>& items, size_t i);

  Value eval(const Expr& e);
  Value eval_node(const Expr& e);
  Value eval_sequence(const Expr& e);
  Value eval_dict(const Expr& e);
  Value eval_call(const Expr& e);
  Value eval_compare(const Expr& e);
  Value eval_logic(const Expr& e);
  CallArgs eval_args(const Expr& e, size_t first);
  CallArgs eval_args(const std::vector<ExprPtr>& args, const std::vector<std::pair<std::string, ExprPtr>>& kwargs);
  Value call_macro(const Node& macro, const std::weak_ptr<Scope>& closure, const CallArgs& args);

  EvalContext ctx_;
  std::shared_ptr<Scope> root_;
  std::shared_ptr<Scope> scope_;
  std::string* out_ = nullptr;
  int depth_ = 0;
  // Namespaces made by this render; their attributes are cleared at the end
  // so that reference cycles (ns.self = ns) do not outlive the render.
  std::vector<std::shared_ptr<ObjectData>> objects_;
};

}  // namespace cohort::chat
