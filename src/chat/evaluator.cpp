// Statements half of the evaluator; expressions are in evaluator_expr.cpp.
#include "chat/evaluator.h"

#include <fmt/format.h>

#include "chat/filters.h"
#include "chat/globals.h"
#include "chat/ops.h"

namespace cohort::chat {

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_.get()) {
    auto it = s->vars_.find(name);
    if (it != s->vars_.end()) return &it->second;
  }
  return nullptr;
}

Evaluator::Nested::Nested(Evaluator& e) : e_(e) {
  if (++e_.depth_ > e_.ctx_.limits().max_depth) {
    --e_.depth_;
    fault(ErrorKind::Limit, fmt::format("template evaluation nests deeper than {} levels", e_.ctx_.limits().max_depth));
  }
}

namespace {

// Makes `scope` current until destroyed.
class ScopeSwap {
 public:
  ScopeSwap(std::shared_ptr<Scope>& slot, std::shared_ptr<Scope> scope) : slot_(slot), saved_(std::move(slot)) {
    slot_ = std::move(scope);
  }
  ~ScopeSwap() { slot_ = std::move(saved_); }
  ScopeSwap(const ScopeSwap&) = delete;
  ScopeSwap& operator=(const ScopeSwap&) = delete;

 private:
  std::shared_ptr<Scope>& slot_;
  std::shared_ptr<Scope> saved_;
};

}  // namespace

Evaluator::Evaluator(const RenderLimits& limits) : ctx_(limits) {}

Evaluator::~Evaluator() {
  for (auto& o : objects_) o->attrs = DictData();
}

std::string Evaluator::render(const Body& body, const DictData& context) {
  root_ = std::make_shared<Scope>(nullptr);
  for (auto& [name, fn] : builtin_globals(&objects_)) root_->set(name, std::move(fn));
  scope_ = std::make_shared<Scope>(root_);
  for (const auto& [k, v] : context.entries()) scope_->set(to_str(k), v);
  std::string out;
  out_ = &out;
  try {
    exec_body(body);
  } catch (const Fault& f) {
    throw located_error(f.kind, f.pos, f.message);
  }
  return out;
}

void Evaluator::write(std::string_view s) {
  if (out_->size() + s.size() > ctx_.limits().max_output_bytes) {
    fault(ErrorKind::Limit, fmt::format("rendered text exceeds {} bytes", ctx_.limits().max_output_bytes));
  }
  ctx_.charge(s.size());
  out_->append(s);
}

std::string Evaluator::capture(const Body& body) {
  std::string buf;
  std::string* saved = out_;
  out_ = &buf;
  try {
    exec_body(body);
  } catch (...) {
    out_ = saved;
    throw;
  }
  out_ = saved;
  return buf;
}

Evaluator::Flow Evaluator::exec_body(const Body& body) {
  for (const NodePtr& n : body) {
    const Flow f = exec(*n);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec(const Node& n) {
  try {
    Nested nested(*this);
    return exec_node(n);
  } catch (Fault& f) {
    if (!f.located) {
      f.located = true;
      f.pos = n.pos;
    }
    throw;
  }
}

Evaluator::Flow Evaluator::exec_node(const Node& n) {
  switch (n.kind) {
    case NodeKind::Text: write(n.text); return Flow::Normal;
    case NodeKind::Output: write(to_str(eval(*n.expr))); return Flow::Normal;
    case NodeKind::If: return exec_if(n);
    case NodeKind::For: return exec_for(n);
    case NodeKind::Set: exec_set(n); return Flow::Normal;
    case NodeKind::Macro: exec_macro(n); return Flow::Normal;
    case NodeKind::FilterBlock: write(to_str(apply_filters(n.filters, Value::string(capture(n.body))))); return Flow::Normal;
    case NodeKind::With: exec_with(n); return Flow::Normal;
    case NodeKind::Break: return Flow::Break;
    case NodeKind::Continue: return Flow::Continue;
    case NodeKind::Generation: return exec_body(n.body);
  }
  return Flow::Normal;
}

Evaluator::Flow Evaluator::exec_if(const Node& n) {
  for (const auto& [test, body] : n.branches) {
    if (truthy(eval(*test))) return exec_body(body);
  }
  return exec_body(n.else_body);
}

Value Evaluator::make_loop(const std::vector<Value>& items, size_t i) {
  auto loop = std::make_shared<ObjectData>();
  loop->kind = ObjectKind::Loop;
  const auto n = static_cast<int64_t>(items.size());
  const auto k = static_cast<int64_t>(i);
  DictData& a = loop->attrs;
  auto set = [&](const char* name, Value v) { a.set(Value::string(name), std::move(v)); };
  set("index", Value::integer(k + 1));
  set("index0", Value::integer(k));
  set("revindex", Value::integer(n - k));
  set("revindex0", Value::integer(n - k - 1));
  set("first", Value::boolean(k == 0));
  set("last", Value::boolean(k == n - 1));
  set("length", Value::integer(n));
  set("depth", Value::integer(1));
  set("depth0", Value::integer(0));
  set("previtem", i > 0 ? items[i - 1] : Value::undefined("there is no previous item"));
  set("nextitem", i + 1 < items.size() ? items[i + 1] : Value::undefined("there is no next item"));
  set("cycle", Value::function("loop.cycle", [i](const CallArgs& args) {
        if (args.positional.empty()) runtime_fault("no items for cycling given");
        return args.positional[i % args.positional.size()];
      }));
  return Value::object(std::move(loop));
}

Evaluator::Flow Evaluator::exec_for(const Node& n) {
  std::vector<Value> items = iterate(eval(*n.expr));
  if (n.filter) {
    std::vector<Value> kept;
    for (const Value& item : items) {
      ctx_.count_iteration();
      ScopeSwap swap(scope_, std::make_shared<Scope>(scope_));
      assign(n.target, item);
      if (truthy(eval(*n.filter))) kept.push_back(item);
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    ScopeSwap swap(scope_, std::make_shared<Scope>(scope_));
    exec_body(n.else_body);
    return Flow::Normal;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    ctx_.count_iteration();
    ScopeSwap swap(scope_, std::make_shared<Scope>(scope_));
    assign(n.target, items[i]);
    scope_->set("loop", make_loop(items, i));
    if (exec_body(n.body) == Flow::Break) break;
  }
  return Flow::Normal;
}

void Evaluator::assign(const Target& t, const Value& v) {
  if (!t.attr.empty()) {
    const Value* ns = scope_->find(t.names[0]);
    if (!ns || !ns->is_object() || ns->object().kind != ObjectKind::Namespace) {
      runtime_fault("cannot assign attribute on non-namespace object");
    }
    ns->object().attrs.set(Value::string(t.attr), v);
    return;
  }
  if (!t.unpack) {
    scope_->set(t.names[0], v);
    return;
  }
  const std::vector<Value> parts = iterate(v);
  if (parts.size() > t.names.size()) {
    runtime_fault(fmt::format("too many values to unpack (expected {})", t.names.size()));
  }
  if (parts.size() < t.names.size()) {
    runtime_fault(fmt::format("not enough values to unpack (expected {}, got {})", t.names.size(), parts.size()));
  }
  for (size_t i = 0; i < parts.size(); ++i) scope_->set(t.names[i], parts[i]);
}

Value Evaluator::apply_filters(const std::vector<FilterCall>& filters, Value v) {
  for (const FilterCall& f : filters) v = apply_filter(ctx_, f.name, v, eval_args(f.args, f.kwargs));
  return v;
}

void Evaluator::exec_set(const Node& n) {
  if (n.expr) {
    assign(n.target, eval(*n.expr));
  } else {
    assign(n.target, apply_filters(n.filters, Value::string(capture(n.body))));
  }
}

void Evaluator::exec_macro(const Node& n) {
  std::weak_ptr<Scope> closure = scope_;
  const Node* macro = &n;
  scope_->set(n.text, Value::function(n.text, [this, macro, closure](const CallArgs& args) {
                return call_macro(*macro, closure, args);
              }));
}

Value Evaluator::call_macro(const Node& m, const std::weak_ptr<Scope>& closure, const CallArgs& args) {
  Nested nested(*this);
  std::shared_ptr<Scope> parent = closure.lock();
  if (!parent) parent = root_;
  ScopeSwap swap(scope_, std::make_shared<Scope>(parent));
  if (args.positional.size() > m.params.size()) {
    runtime_fault(fmt::format("macro '{}' takes not more than {} argument(s)", m.text, m.params.size()));
  }
  for (const auto& [key, value] : args.keyword) {
    bool known = false;
    for (const MacroParam& p : m.params) known = known || p.name == key;
    if (!known) runtime_fault(fmt::format("macro '{}' takes no keyword argument '{}'", m.text, key));
  }
  for (size_t i = 0; i < m.params.size(); ++i) {
    const MacroParam& p = m.params[i];
    const Value* given = i < args.positional.size() ? &args.positional[i] : nullptr;
    for (const auto& [key, value] : args.keyword) {
      if (key == p.name) given = &value;
    }
    if (given) {
      scope_->set(p.name, *given);
    } else if (p.default_value) {
      scope_->set(p.name, eval(*p.default_value));
    } else {
      scope_->set(p.name, Value::undefined(fmt::format("parameter '{}' was not provided", p.name)));
    }
  }
  return Value::string(capture(m.body));
}

void Evaluator::exec_with(const Node& n) {
  ScopeSwap swap(scope_, std::make_shared<Scope>(scope_));
  for (const auto& [target, expr] : n.assigns) assign(target, eval(*expr));
  exec_body(n.body);
}

}  // namespace cohort::chat
