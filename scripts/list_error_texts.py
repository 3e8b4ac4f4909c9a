#!/usr/bin/env python3
"""Prints every error text Nereid builds with a literal message (src/ and backends/, tests
excluded) as <file> TAB <line> TAB <code> TAB <text>, <x> standing for run-time values. docs/error_texts.md
lists each of them next to Triton's; run this after adding an error to find what the table lacks.

  scripts/list_error_texts.py [ROOT]           the inventory
  scripts/list_error_texts.py --check [ROOT]   fails (exit 1) listing every text that has no row in
                                               ROOT/docs/error_texts.md (ctest: error_texts_table)

A row covers a text when one of the backticked texts in its text column equals it once every
<placeholder> on both sides is taken as "any value" (so the table may name values its own way).
A text the sources build in two ways (a conditional) is listed once per way; a message first
kept in a `std::string` variable is followed to its assignment."""

import os
import re
import sys

def split_top(arg, sep):
    parts, depth, cur, i = [], 0, "", 0
    while i < len(arg):
        c = arg[i]
        if c == '"':
            j = i + 1
            while arg[j] != '"':
                j += 2 if arg[j] == "\\" else 1
            cur += arg[i:j+1]; i = j + 1; continue
        if c in "([{": depth += 1
        if c in ")]}": depth -= 1
        if depth == 0 and arg.startswith(sep, i):
            parts.append(cur); cur = ""; i += len(sep); continue
        cur += c; i += 1
    parts.append(cur)
    return [p.strip() for p in parts]

CONSTANTS = {}  # string constants of src/ headers (inline constexpr std::string_view kX = "...")


def name_of(expr):
    expr = expr.strip()
    if re.fullmatch(r'ShapeToString\(.*\)\.substr\(1\)', expr):  # "[a,b]" without its "["
        return "<dims>]"
    m = re.fullmatch(r'LoadError\((.*)\)', expr, re.S)  # backends/pytorch/io_plan.cc
    if m and len(split_top(m.group(1), ",")) == 2:
        return "unable to load model '<model_name>', " + render(split_top(m.group(1), ",")[1])
    if re.fullmatch(r'Prefix\(\w+\)', expr):  # request_validator.cc: "[request id: <id>] "
        return "[request id: <id>] "
    m = re.fullmatch(r'(?:std::string\()?(k[A-Z]\w*)\)?', expr)
    if m and m.group(1) in CONSTANTS:
        return CONSTANTS[m.group(1)]
    m = re.fullmatch(r'std::string\((.*)\)', expr, re.S)
    if m and m.group(1).strip().startswith('"'):
        return render(m.group(1))
    ids = re.findall(r"[A-Za-z_][A-Za-z_0-9]*", expr)
    skip = {"std","to_string","string","ClientText","c_str","message","status","value","ShapeToString",
            "DataTypeWireName","count","size","max","numeric_limits","int64_t","Escape","logging","what","e","ec"}
    for t in reversed(ids):
        if t not in skip:
            return "<" + t.rstrip("_") + ">"
    return "<" + (ids[-1] if ids else "…") + ">"

def render(arg):
    out = ""
    for tok in split_top(arg, "+"):
        lits = re.findall(r'"((?:[^"\\]|\\.)*)"', tok)
        if tok.startswith('"') and re.fullmatch(r'(\s*"(?:[^"\\]|\\.)*"\s*)+', tok):
            out += "".join(lits)
        elif "?" in tok and lits:
            out += "<" + " | ".join(l for l in lits) + ">"
        else:
            out += name_of(tok)
    return out.replace("\\'", "'").replace('\\"', '"')

def assigned(text, var, before):
    """The expression last assigned to `std::string var` in `text` before offset `before`, joined
    into one line (None when there is none)."""
    found = None
    for a in re.finditer(r"\bstd::string\s+" + var + r"\s*=\s*", text[:before]):
        found = a
    if found is None:
        return None
    i = found.end()
    while i < len(text) and text[i] != ";":
        if text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            i = j
        i += 1
    return " ".join(text[found.end():i].split())


def ternary(arg):
    """(condition, a, b) when `arg` is one top-level `c ? a : b` whose branches hold literals."""
    depth, i, q = 0, 0, -1
    while i < len(arg):
        c = arg[i]
        if c == '"':
            j = i + 1
            while arg[j] != '"':
                j += 2 if arg[j] == "\\" else 1
            i = j + 1; continue
        if c in "([{": depth += 1
        if c in ")]}": depth -= 1
        if depth == 0 and c == "?" and q < 0: q = i
        elif depth == 0 and c == ":" and q >= 0 and arg[i:i+2] != "::" and arg[i-1] != ":":
            a, b = arg[q+1:i].strip(), arg[i+1:].strip()
            if '"' in a and '"' in b:
                return arg[:q].strip(), a, b
            return None
        i += 1
    return None


def variants(arg):
    """The texts `arg` can build: both branches of a top-level conditional, else itself."""
    t = ternary(arg)
    if t is None:
        return [arg]
    return variants(t[1]) + variants(t[2])


args = [a for a in sys.argv[1:] if a != "--check"]
CHECK = "--check" in sys.argv[1:]
ROOT = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
for dp, dn, fn in os.walk(os.path.join(ROOT, "src")):
    for f in fn:
        if f.endswith(".h"):
            for m in re.finditer(r'constexpr\s+(?:std::string_view|const char\*?|char)\s*(?:\w+\[\])?\s*'
                                 r'(k[A-Z]\w*)(?:\[\])?\s*=\s*"((?:[^"\\]|\\.)*)"',
                                 open(os.path.join(dp, f), encoding="utf-8").read()):
                CONSTANTS[m.group(1)] = m.group(2)
FUNCS = r"(InvalidArgument|Internal|Unavailable|NotFound|Unsupported|AlreadyExists|OutOfRange|ModelError|FailRead|ErrorResponse|QueueError|OverrideFailed|LoadFailed|BadPath|Fail|Status)"
CODE = {"InvalidArgument":"INVALID_ARG","Internal":"INTERNAL","Unavailable":"UNAVAILABLE","NotFound":"NOT_FOUND",
        "Unsupported":"UNSUPPORTED","AlreadyExists":"ALREADY_EXISTS","OutOfRange":"OUT_OF_RANGE","ModelError":"INVALID_ARG",
        "BadPath":"INVALID_ARG","LoadFailed":"INVALID_ARG"}
rows=[]
for base in ("src", "backends"):
    for dp, dn, fn in sorted(os.walk(os.path.join(ROOT, base))):
        for f in sorted(fn):
            if not f.endswith(".cc") or f.endswith("_test.cc"): continue
            path = os.path.join(dp, f); text = open(path, encoding="utf-8").read()
            inside = 0  # end of an OverrideFailed(...) call: its inner Status is rendered with it
            for m in re.finditer(r"\b" + FUNCS + r"\(", text):
                if m.start() < inside: continue
                i = m.end(); depth = 1
                while i < len(text) and depth:
                    c = text[i]
                    if c == '"':
                        j = i + 1
                        while text[j] != '"': j += 2 if text[j] == "\\" else 1
                        i = j
                    elif c == "(": depth += 1
                    elif c == ")": depth -= 1
                    i += 1
                arg = " ".join(text[m.end():i-1].split())
                if m.group(1) == "OverrideFailed": inside = i
                if re.fullmatch(r"\w+", arg):  # a message built first: `std::string x = ...;`
                    arg = assigned(text, arg, m.start()) or arg
                if '"' not in arg: continue
                fn_ = m.group(1); code = CODE.get(fn_, ""); ways = None
                parts = split_top(arg, ",")
                if fn_ in ("FailRead", "ErrorResponse", "QueueError") and len(parts) >= 2:
                    code = "HTTP " + parts[0]; arg = ",".join(parts[1:])
                elif fn_ == "OverrideFailed" and len(parts) >= 2:
                    # model_repository.cc: "failed to load '<m>', " + the reason's message
                    code = "(as wrapped)"; arg = ",".join(parts[1:])
                    inner = re.match(r'^(InvalidArgument|Internal|Unsupported|Unavailable)\((.*)\)$', arg)
                    if inner:
                        code = CODE[inner.group(1)]
                        arg = '"failed to load \'" + name + "\', " + ' + inner.group(2)
                elif fn_ == "LoadFailed" and len(parts) >= 2:  # model_repository.cc
                    arg = '"load failed for model \'" + name + "\': " + ' + ",".join(parts[1:])
                elif fn_ == "Status" and len(parts) >= 2:
                    code = "(as wrapped)"; arg = ",".join(parts[1:])
                elif fn_ == "BadPath" and len(parts) >= 2:
                    ways = ['"invalid load parameter \'file:" + relative + "\': " + ' + v
                            for v in variants(",".join(parts[1:]))]
                elif fn_ == "ModelError":
                    arg = ",".join(parts[1:]) if len(parts) > 1 else arg
                    arg = '"model \'" + name + "\': " + ' + arg if not arg.startswith('"model') else arg
                elif fn_ == "Fail":
                    code = "INVALID_ARG"
                    if arg.startswith("Internal("): continue
                inner = re.match(r'^(InvalidArgument|Internal|Unsupported|Unavailable)\((.*)\)$', arg)
                if inner: arg = inner.group(2); code = code or CODE[inner.group(1)]
                line = text.count("\n", 0, m.start()) + 1
                for v in ways or variants(arg):
                    rows.append((os.path.relpath(path, ROOT), line, code, render(v)))
seen=set()
unique=[]
for r in rows:
    k=(r[0],r[3])
    if k in seen: continue
    seen.add(k)
    unique.append(r)


def norm(t):
    """`t` with every <placeholder> (nested ones too) as <> and runs of spaces as one."""
    t = t.replace("\\|", "|")
    prev = None
    while prev != t:
        prev, t = t, re.sub(r"<[^<>]*>", "\0", t)
    return " ".join(re.sub("\0+", "<>", t).split())


if not CHECK:
    for r in unique:
        print("\t".join(map(str, r)))
    sys.exit(0)

covered = set()
for line in open(os.path.join(ROOT, "docs", "error_texts.md"), encoding="utf-8"):
    if not line.startswith("| "):
        continue
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.rstrip("\n"))[1:-1]]
    if len(cells) >= 4:
        covered.update(norm(m.group(1)) for m in re.finditer(r"`([^`]*)`", cells[1]))
missing = [r for r in unique if norm(r[3]) not in covered]
for r in missing:
    print("no row in docs/error_texts.md: " + "\t".join(map(str, r)))
print(f"{len(unique) - len(missing)} of {len(unique)} error texts have a row in docs/error_texts.md",
      file=sys.stderr)
sys.exit(1 if missing else 0)
