// A whole file read into memory as bytes (a prompt, a template, a grammar).
#pragma once

#include <string>

namespace cohort {

// The bytes of the file at `path`. Throws cohort::Error "cannot read '<path>'"
// when it cannot be opened or read.
std::string read_text_file(const std::string& path);

}  // namespace cohort
