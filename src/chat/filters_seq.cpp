// Filters over sequences: map, select/reject(attr), sort, unique, min/max,
// sum, join, first/last, list, reverse, items, dictsort.
#include <algorithm>
#include <fmt/format.h>

#include "chat/filters_impl.h"
#include "chat/ops.h"
#include "chat/unicode.h"

namespace cohort::chat::detail {
namespace {

CallArgs tail_args(const CallArgs& args, size_t skip) {
  CallArgs rest;
  if (args.positional.size() > skip) rest.positional.assign(args.positional.begin() + static_cast<long>(skip), args.positional.end());
  rest.keyword = args.keyword;
  return rest;
}

// jinja2's select_or_reject: optional attribute, optional test name + args.
Value select_or_reject(EvalContext& ctx, const Value& in, const CallArgs& args, bool select, bool by_attr) {
  size_t next = 0;
  Value attribute;
  if (by_attr) {
    if (args.positional.empty()) runtime_fault("missing parameter for attribute name");
    attribute = args.positional[next++];
  }
  std::string test;
  if (args.positional.size() > next) {
    const Value& t = args.positional[next++];
    if (!t.is_string()) runtime_fault("test name must be a string");
    test = t.str();
  }
  const CallArgs test_args = tail_args(args, next);
  std::vector<Value> out;
  for (const Value& item : iterate(in)) {
    const Value v = by_attr ? attribute_of(ctx, item, attribute) : item;
    const bool pass = test.empty() ? truthy(v) : apply_test(ctx, test, v, test_args);
    if (pass == select) out.push_back(item);
  }
  return Value::list(std::move(out), SeqKind::Generator);
}

// Sort key as jinja2's ignore_case: strings lowered unless case-sensitive.
Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return Value::string(utf8::lower(v.str()));
  return v;
}

std::vector<Value> attr_keys(EvalContext& ctx, const std::vector<Value>& items, const Value* attribute,
                             bool case_sensitive) {
  std::vector<Value> keys;
  keys.reserve(items.size());
  for (const Value& item : items) {
    keys.push_back(sort_key(attribute && !attribute->is_none() ? attribute_of(ctx, item, *attribute) : item, case_sensitive));
  }
  return keys;
}

Value min_max(EvalContext& ctx, const Value& in, const CallArgs& args, bool want_max) {
  ArgReader a(args, want_max ? "max" : "min", {"case_sensitive", "attribute"});
  const std::vector<Value> items = iterate(in);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  const bool cs = a.get(0) && truthy(*a.get(0));
  const std::vector<Value> keys = attr_keys(ctx, items, a.get(1), cs);
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const int c = compare_values(keys[i], keys[best]);
    if (want_max ? c > 0 : c < 0) best = i;
  }
  return items[best];
}

}  // namespace

Value attribute_of(EvalContext& ctx, const Value& v, const Value& attribute) {
  if (attribute.is_integral()) return get_item(ctx, v, attribute);
  if (!attribute.is_string()) runtime_fault("attribute must be a string or integer");
  Value cur = v;
  size_t start = 0;
  const std::string& path = attribute.str();
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    const bool numeric = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    cur = numeric && part.size() < 18 ? get_item(ctx, cur, Value::integer(std::stoll(part))) : get_item(ctx, cur, Value::string(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value f_map(EvalContext& ctx, const Value& in, const CallArgs& args) {
  std::vector<Value> out;
  const Value* attribute = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, v] : args.keyword) {
    if (k == "attribute") attribute = &v;
    if (k == "default") fallback = &v;
  }
  if (attribute) {
    for (const Value& item : iterate(in)) {
      Value v = attribute_of(ctx, item, *attribute);
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::list(std::move(out), SeqKind::Generator);
  }
  if (args.positional.empty() || !args.positional[0].is_string()) runtime_fault("map requires a filter argument");
  const std::string name = args.positional[0].str();
  const CallArgs rest = tail_args(args, 1);
  for (const Value& item : iterate(in)) out.push_back(apply_filter(ctx, name, item, rest));
  return Value::list(std::move(out), SeqKind::Generator);
}

Value f_select(EvalContext& ctx, const Value& in, const CallArgs& a) { return select_or_reject(ctx, in, a, true, false); }
Value f_reject(EvalContext& ctx, const Value& in, const CallArgs& a) { return select_or_reject(ctx, in, a, false, false); }
Value f_selectattr(EvalContext& ctx, const Value& in, const CallArgs& a) { return select_or_reject(ctx, in, a, true, true); }
Value f_rejectattr(EvalContext& ctx, const Value& in, const CallArgs& a) { return select_or_reject(ctx, in, a, false, true); }

Value f_sort(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "sort", {"reverse", "case_sensitive", "attribute"});
  std::vector<Value> items = iterate(in);
  const bool rev = a.get(0) && truthy(*a.get(0));
  const std::vector<Value> keys = attr_keys(ctx, items, a.get(2), a.get(1) && truthy(*a.get(1)));
  std::vector<size_t> order(items.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    return rev ? compare_values(keys[y], keys[x]) < 0 : compare_values(keys[x], keys[y]) < 0;
  });
  std::vector<Value> out;
  for (size_t i : order) out.push_back(items[i]);
  return Value::list(std::move(out));
}

Value f_dictsort(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "dictsort", {"case_sensitive", "by", "reverse"});
  if (!in.is_dict()) runtime_fault("dictsort requires a mapping");
  const std::string by = a.get(1) ? to_str(*a.get(1)) : "key";
  if (by != "key" && by != "value") runtime_fault("You can only sort by either \"key\" or \"value\"");
  std::vector<Value> pairs = f_items(ctx, in, {}).list().items;
  const bool cs = a.get(0) && truthy(*a.get(0));
  const bool rev = a.get(2) && truthy(*a.get(2));
  const size_t pos = by == "key" ? 0 : 1;
  std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& x, const Value& y) {
    const Value kx = sort_key(x.list().items[pos], cs);
    const Value ky = sort_key(y.list().items[pos], cs);
    return rev ? compare_values(ky, kx) < 0 : compare_values(kx, ky) < 0;
  });
  return Value::list(std::move(pairs));
}

Value f_unique(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "unique", {"case_sensitive", "attribute"});
  const std::vector<Value> items = iterate(in);
  const std::vector<Value> keys = attr_keys(ctx, items, a.get(1), a.get(0) && truthy(*a.get(0)));
  std::vector<Value> out;
  std::vector<Value> seen;
  for (size_t i = 0; i < items.size(); ++i) {
    if (std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, keys[i]); })) continue;
    seen.push_back(keys[i]);
    out.push_back(items[i]);
  }
  return Value::list(std::move(out), SeqKind::Generator);
}

Value f_min(EvalContext& ctx, const Value& in, const CallArgs& args) { return min_max(ctx, in, args, false); }
Value f_max(EvalContext& ctx, const Value& in, const CallArgs& args) { return min_max(ctx, in, args, true); }

Value f_sum(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "sum", {"attribute", "start"});
  Value total = a.get_or(1, Value::integer(0));
  for (const Value& item : iterate(in)) {
    total = binary_op(ctx, "+", total, a.get(0) ? attribute_of(ctx, item, *a.get(0)) : item);
  }
  return total;
}

Value f_join(EvalContext& ctx, const Value& in, const CallArgs& args) {
  ArgReader a(args, "join", {"d", "attribute"});
  const std::string sep = a.get(0) ? to_str(*a.get(0)) : "";
  std::string out;
  bool first = true;
  for (const Value& item : iterate(in)) {
    if (!first) out += sep;
    first = false;
    out += to_str(a.get(1) ? attribute_of(ctx, item, *a.get(1)) : item);
    check_value_size(out.size());
  }
  ctx.charge(out.size());
  return Value::string(std::move(out));
}

Value f_first(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "first", {});
  const std::vector<Value> items = iterate(in);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "last", {});
  const std::vector<Value> items = iterate(in);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_list(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "list", {});
  return Value::list(iterate(in));
}

Value f_reverse(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "reverse", {});
  if (in.is_string()) {
    std::u32string cps = utf8::decode(in.str());
    std::reverse(cps.begin(), cps.end());
    return Value::string(utf8::encode(cps));
  }
  std::vector<Value> items = iterate(in);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items), SeqKind::Generator);
}

Value f_items(EvalContext&, const Value& in, const CallArgs& args) {
  ArgReader a(args, "items", {});
  if (in.is_undefined()) return Value::list({}, SeqKind::Generator);
  if (!in.is_dict()) runtime_fault("Can only get item pairs from a mapping.");
  std::vector<Value> out;
  for (const auto& [k, v] : in.dict().entries()) out.push_back(Value::list({k, v}, SeqKind::Tuple));
  return Value::list(std::move(out), SeqKind::Generator);
}

}  // namespace cohort::chat::detail
