#include "common/text_file.h"

#include <fstream>
#include <iterator>

#include "common/error.h"

namespace cohort {

std::string read_text_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read '{}'", path);
  std::string text(std::istreambuf_iterator<char>(in), {});
  if (in.bad()) fail("cannot read '{}'", path);
  return text;
}

}  // namespace cohort
