// Internal to the filters: the sequence filters (filters_seq.cpp) that the
// registry in filters.cpp lists. Not part of the chat/ API.
#pragma once

#include "chat/filters.h"

namespace cohort::chat::detail {

Value f_map(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_select(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_reject(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_selectattr(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_rejectattr(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_sort(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_dictsort(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_unique(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_min(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_max(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_sum(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_join(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_first(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_last(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_list(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_reverse(EvalContext& ctx, const Value& in, const CallArgs& args);
Value f_items(EvalContext& ctx, const Value& in, const CallArgs& args);

// getattr for the `attribute=` arguments: dotted paths, integer parts index.
Value attribute_of(EvalContext& ctx, const Value& v, const Value& attribute);

}  // namespace cohort::chat::detail
