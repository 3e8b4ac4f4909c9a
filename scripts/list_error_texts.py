#!/usr/bin/env python3
"""Prints every error text Nereid builds with a literal message (src/ and backends/, tests
excluded) as <file> TAB <line> TAB <code> TAB <text>, <x> standing for run-time values. docs/error_texts.md
lists each of them next to Triton's; run this after adding an error to find what the table lacks."""

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

def name_of(expr):
    expr = expr.strip()
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

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
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
            for m in re.finditer(r"\b" + FUNCS + r"\(", text):
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
                if '"' not in arg: continue
                fn_ = m.group(1); code = CODE.get(fn_, "")
                parts = split_top(arg, ",")
                if fn_ in ("FailRead", "ErrorResponse", "QueueError") and len(parts) >= 2:
                    code = "HTTP " + parts[0]; arg = ",".join(parts[1:])
                elif fn_ in ("Status", "OverrideFailed") and len(parts) >= 2:
                    code = {"OverrideFailed":"(as wrapped)"}.get(fn_, "(as wrapped)"); arg = ",".join(parts[1:])
                elif fn_ == "BadPath" and len(parts) >= 2:
                    arg = '"invalid load parameter \'file:" + relative + "\': " + ' + ",".join(parts[1:])
                elif fn_ == "ModelError":
                    arg = ",".join(parts[1:]) if len(parts) > 1 else arg
                    arg = '"model \'" + name + "\': " + ' + arg if not arg.startswith('"model') else arg
                elif fn_ == "Fail":
                    code = "INVALID_ARG"
                    if arg.startswith("Internal("): continue
                inner = re.match(r'^(InvalidArgument|Internal|Unsupported|Unavailable)\((.*)\)$', arg)
                if inner: arg = inner.group(2); code = code or CODE[inner.group(1)]
                t = render(arg)
                line = text.count("\n", 0, m.start()) + 1
                rows.append((os.path.relpath(path, ROOT), line, code, t))
seen=set()
for r in rows:
    k=(r[0],r[3])
    if k in seen: continue
    seen.add(k)
    print("\t".join(map(str,r)))
