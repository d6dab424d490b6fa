#!/usr/bin/env python3
"""Syntax-checks C++ files with the flags CMake gives them (build/compile_commands.json), without
building: a file CMake has not seen yet (a new split) borrows the flags of a file in its folder."""
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parents[2]
db_path = Path(os.environ.get("BUILD_DIR", root / "build")) / "compile_commands.json"
if not db_path.exists():
    sys.exit(f"compile_check: {db_path} is missing: configure with -DCMAKE_EXPORT_COMPILE_COMMANDS=ON")
entries = json.load(open(db_path))
failed = 0
for arg in sys.argv[1:]:
    path = str(Path(arg).resolve())
    same = [e for e in entries if e["file"] == path]
    near = [e for e in entries if Path(e["file"]).parent == Path(path).parent and e["file"].endswith(".cpp")]
    if not (same or near):
        print(f"compile_check: no flags for {arg} (no compiled file in its folder)")
        failed += 1
        continue
    e = (same or near)[0]
    words = shlex.split(e["command"])
    out, i = [], 0
    while i < len(words):
        if words[i] == "-o":
            i += 2
            continue
        if words[i] == "-c":
            i += 2
            continue
        out.append(words[i])
        i += 1
    sys.stdout.flush()
    r = subprocess.run(out + ["-fsyntax-only", path], cwd=e["directory"])
    failed += r.returncode != 0
    print(f"{'ok  ' if r.returncode == 0 else 'FAIL'} {arg}", flush=True)
sys.exit(1 if failed else 0)
