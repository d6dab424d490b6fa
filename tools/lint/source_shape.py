#!/usr/bin/env python3
"""Source shape against issue 19's targets: files over 600 lines, the median file, functions over 120 lines."""
import re
import statistics
import sys
from pathlib import Path

FILE_LIMIT = 600
FUNCTION_LIMIT = 120
FOLDERS = ["src", "gates", "include"]
SUFFIXES = {".cpp", ".h", ".cu", ".cuh"}
CONTAINER = re.compile(r'\b(namespace|class|struct|union|enum)\b[^()]*$|extern\s+"C"\s*$')
NOT_FUNCTION = re.compile(r'^(if|for|while|switch|catch|do|else|return)\b')


def blank_comments_and_strings(text):
    """The text with comments, string and char literals blanked, newlines kept (line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i)); i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + m.group(1) + '"', i) if m else -1
            j = n if end < 0 else end + len(m.group(1)) + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j])); i = j
        elif c in "\"'" and not (c == "'" and i > 0 and text[i - 1].isalnum()):  # 1'000 digit separators
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else "")); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)


def functions(text):
    """(name, first line, line count) of each function body not nested inside another function."""
    text = blank_comments_and_strings(text)
    found, stack, head_start = [], [], 0
    for i, c in enumerate(text):
        if c in ";}":
            if c == "}" and stack:
                kind, start_line, name = stack.pop()
                if kind == "function" and all(k == "container" for k, _, _ in stack):
                    end_line = text.count("\n", 0, i) + 1
                    found.append((name, start_line, end_line - start_line + 1))
            head_start = i + 1
        elif c == "{":
            head = " ".join(text[head_start:i].split())
            head_start = i + 1
            if stack and stack[-1][0] != "container":
                stack.append(("block", 0, ""))
            elif CONTAINER.search(head) or head.endswith("=") or head == "":
                stack.append(("container" if CONTAINER.search(head) else "block", 0, ""))
            else:
                m = re.search(r"([~\w:<>]+)\s*\(", head)
                if m and ")" in head and not NOT_FUNCTION.match(head):
                    sig_at = text.rfind(head.split()[0], 0, i)
                    stack.append(("function", text.count("\n", 0, max(sig_at, 0)) + 1, m.group(1)))
                else:
                    stack.append(("block", 0, ""))
    return found


def main(root):
    root = Path(root)
    sizes, long_functions = {}, []
    for folder in FOLDERS:
        for p in sorted((root / folder).rglob("*")):
            if p.suffix not in SUFFIXES or not p.is_file():
                continue
            text = p.read_text(errors="replace")
            rel = str(p.relative_to(root))
            sizes[rel] = text.count("\n")
            long_functions += [(n, rel, line, name) for name, line, n in functions(text) if n > FUNCTION_LIMIT]
    big = sorted(((n, f) for f, n in sizes.items() if n > FILE_LIMIT), reverse=True)
    median = statistics.median(sizes.values())
    print(f"{len(sizes)} files, median {median:g} lines (target under 300)")
    print(f"files over {FILE_LIMIT} lines: {len(big)}")
    for n, f in big:
        print(f"  {n:5d}  {f}")
    print(f"functions over {FUNCTION_LIMIT} lines: {len(long_functions)}")
    for n, f, line, name in sorted(long_functions, reverse=True):
        print(f"  {n:5d}  {f}:{line}  {name}")
    return 1 if big or long_functions or median >= 300 else 0


def self_test():
    """The check on a planted tree: a file over the limit, a function over it (with braces in its
    strings, comments and lambdas, which must not end it early), and clean code beside them."""
    import contextlib
    import io
    import tempfile
    with tempfile.TemporaryDirectory() as root:
        src = Path(root, "src", "demo")
        src.mkdir(parents=True)
        long_body = "\n".join(f'  s += "}}{{"; // }} {i}\n  auto f{i} = [&] {{ return {i}; }};' for i in range(70))
        Path(src, "long.cpp").write_text(
            "namespace gauntlet {\nnamespace {\nstruct S {\n  int small() const { return 1; }\n};\n}  // namespace\n"
            f"int planted_long(int x) {{\n  std::string s;\n{long_body}\n  return x;\n}}\n"
            "int short_one() {\n  if (true) {\n    return 2;\n  }\n  return 3;\n}\n}  // namespace gauntlet\n")
        Path(src, "big.h").write_text("// big\n" + "int a;\n" * (FILE_LIMIT + 1))
        Path(src, "fine.cpp").write_text("int fine() { return 0; }\n")
        report = io.StringIO()
        with contextlib.redirect_stdout(report):
            status = main(root)
        text = report.getvalue()
    checks = {
        "exit status 1": status == 1,
        "big.h reported": "src/demo/big.h" in text,
        "planted_long reported": "src/demo/long.cpp:7  planted_long" in text,
        "short_one not reported": "short_one" not in text,
        "fine.cpp not reported": "fine.cpp" not in text,
        "one long function": f"functions over {FUNCTION_LIMIT} lines: 1" in text,
    }
    for name, ok in checks.items():
        print(("ok    " if ok else "FAIL  ") + name)
    if not all(checks.values()):
        print(text)
    return 0 if all(checks.values()) else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]))
