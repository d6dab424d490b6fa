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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]))
