// What engine/grammar.cpp and engine/grammar_matcher.cpp share of the
// grammar engine (xgrammar); no other file includes it.
#pragma once

#include <xgrammar/xgrammar.h>

#include "engine/grammar.h"

namespace cohort::engine {

struct Grammar::Compiled {
  xgrammar::CompiledGrammar grammar;
};

}  // namespace cohort::engine
