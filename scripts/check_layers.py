#!/usr/bin/env python3
"""Nereid's layering, declared in src/layers.txt (docs/architecture.md, "Layers").

  check_layers.py check [ROOT]
      Fails (exit 1) on every #include of a header under ROOT/src that points up or sideways: to a
      header whose library is neither the including file's own nor one its library uses, directly
      or through the libraries it uses. Also fails on a file under src/ that no library owns.
      ctest `layering` runs it on the checkout.

  check_layers.py targets [ROOT]
      Prints the declared targets, one a line (CMake reads them).

  check_layers.py roots ROOT MANIFEST OUT
      Run by CMake at configure time (src/CMakeLists.txt). MANIFEST has one line per declared
      target: name, type, source dir, sources and direct links (tab-separated, lists split by ';').
      Fails on a source compiled into a library that does not own it and on a link to a declared
      library the target may not use; then makes OUT/<target>/ hold only the target's headers
      (symbolic links into src/: a whole folder when the target owns all of it, else file by file).
"""

import fnmatch
import os
import re
import shutil
import sys
from pathlib import Path

HEADER_SUFFIXES = (".h", ".hpp", ".inc")
SOURCE_SUFFIXES = HEADER_SUFFIXES + (".cc", ".cpp")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')


class LayerError(Exception):
    pass


class Layers:
    """The parsed declaration: targets in order, what each owns and uses."""

    def __init__(self, text, where="layers.txt"):
        self.order = []  # target names, lowest first
        self.owns = {}  # target -> [path patterns]
        self.uses = {}  # target -> [targets]
        entries = []
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.split("#", 1)[0].rstrip()
            if not line:
                continue
            if raw[0].isspace():
                if not entries:
                    raise LayerError(f"{where}:{number}: continuation line before any target")
                entries[-1][1].extend(line.split())
            else:
                words = line.split()
                entries.append((number, words[1:], words[0]))
        for number, words, target in entries:
            if target in self.owns:
                raise LayerError(f"{where}:{number}: {target} is declared twice")
            owns, uses, key = [], [], None
            for word in words:
                if word in ("owns", "uses"):
                    key = word
                elif key == "owns":
                    owns.append(word)
                elif key == "uses":
                    if word not in self.owns:
                        raise LayerError(
                            f"{where}:{number}: {target} uses {word}, which is not declared above it"
                        )
                    uses.append(word)
                else:
                    raise LayerError(f"{where}:{number}: expected 'owns' or 'uses', not '{word}'")
            if not owns:
                raise LayerError(f"{where}:{number}: {target} owns nothing")
            self.order.append(target)
            self.owns[target] = owns
            self.uses[target] = uses
        self._closure = {}
        for target in self.order:  # each uses only earlier targets: one pass suffices
            reach = set()
            for used in self.uses[target]:
                reach.add(used)
                reach |= self._closure[used]
            self._closure[target] = reach

    def reach(self, target):
        """Every target `target` may include from, besides itself."""
        return self._closure[target]

    def owner(self, rel):
        """The target owning src/-relative path `rel` (posix), or None."""
        globs = [t for t in self.order for p in self.owns[t] if not p.endswith("/")
                 and fnmatch.fnmatchcase(rel, p)]
        if len(set(globs)) > 1:
            raise LayerError(f"src/{rel} is claimed by {' and '.join(sorted(set(globs)))}")
        if globs:
            return globs[0]
        best, best_len = None, -1
        for target in self.order:
            for p in self.owns[target]:
                if p.endswith("/") and rel.startswith(p) and len(p) > best_len:
                    best, best_len = target, len(p)
        return best

    def exclusive_folder(self, target, folder):
        """True when no other target owns anything under `folder`."""
        for other in self.order:
            if other == target:
                continue
            for p in self.owns[other]:
                if p.startswith(folder) or (folder.startswith(p) and p.endswith("/")):
                    return False
        return True

    def direction(self, source, target):
        """'up' when `target` uses `source` (directly or not), else 'sideways'."""
        return "up" if source in self._closure[target] else "sideways"


def load(root):
    path = Path(root) / "src" / "layers.txt"
    return Layers(path.read_text(), str(path))


def source_files(src):
    for path in sorted(src.rglob("*")):
        if path.is_file() and path.suffix in SOURCE_SUFFIXES:
            yield path


def check(root):
    root = Path(root)
    src = root / "src"
    layers = load(root)
    problems = []
    for path in source_files(src):
        rel = path.relative_to(src).as_posix()
        owner = layers.owner(rel)
        if owner is None:
            problems.append(f"src/{rel}: no library in src/layers.txt owns this file")
            continue
        text = path.read_text(errors="replace").splitlines()
        for number, line in enumerate(text, 1):
            match = INCLUDE_RE.match(line)
            if not match:
                continue
            spelled = match.group(1)
            # As the compiler looks: beside the including file first, then the include roots.
            beside = path.parent / spelled
            target_path = beside if beside.is_file() else src / spelled
            if not target_path.is_file():
                continue  # not a header under src/ (generated protos, include/nereid, system)
            target_rel = os.path.relpath(target_path.resolve(), src.resolve()).replace(os.sep, "/")
            if target_rel.startswith("../"):
                continue
            included = layers.owner(target_rel)
            if included is None or included == owner or included in layers.reach(owner):
                continue
            problems.append(
                f"src/{rel}:{number}: includes \"{spelled}\" of {included}, which {owner} does not "
                f"use: the include points {layers.direction(owner, included)} (src/layers.txt)")
    return problems


def make_roots(root, manifest, out):
    root, out = Path(root), Path(out)
    src = (root / "src").resolve()
    layers = load(root)
    problems, kinds = [], {}
    for line in Path(manifest).read_text().splitlines():
        if not line.strip():
            continue
        name, kind, source_dir, sources, links = (line.split("\t") + [""] * 5)[:5]
        kinds[name] = kind
        for source in filter(None, sources.split(";")):
            path = Path(source) if os.path.isabs(source) else Path(source_dir) / source
            rel = os.path.relpath(path.resolve(), src).replace(os.sep, "/")
            if rel.startswith("../"):
                continue
            owner = layers.owner(rel)
            if owner != name:
                problems.append(f"src/{rel} is compiled into {name} but src/layers.txt gives it "
                                f"to {owner or 'no library'}")
        for link in filter(None, links.split(";")):
            if link in layers.owns and link != name and link not in layers.reach(name):
                problems.append(f"{name} links {link}, which it does not use in src/layers.txt: "
                                f"the link points {layers.direction(name, link)}")
    for name in layers.order:
        if name not in kinds:
            problems.append(f"src/layers.txt declares {name}, which the build does not define")
    if problems:
        raise LayerError("\n".join(problems))

    wanted = {}  # link path under out -> what it points to
    headers = [p for p in source_files(src) if p.suffix in HEADER_SUFFIXES]
    for name in layers.order:
        for pattern in layers.owns[name]:
            if pattern.endswith("/") and layers.exclusive_folder(name, pattern):
                wanted[out / name / pattern.rstrip("/")] = src / pattern.rstrip("/")
        for path in headers:
            rel = path.relative_to(src).as_posix()
            if layers.owner(rel) != name:
                continue
            folder = next((p for p in layers.owns[name] if p.endswith("/") and rel.startswith(p)
                           and layers.exclusive_folder(name, p)), None)
            if folder is None:
                wanted[out / name / rel] = path
    # Bring OUT to exactly `wanted`, touching nothing that is already right (ccache, ninja).
    for name in layers.order:
        (out / name).mkdir(parents=True, exist_ok=True)
    existing = set()
    for folder, dirs, files in os.walk(out):  # does not enter linked folders
        existing |= {Path(folder) / n for n in dirs + files if (Path(folder) / n).is_symlink()}
    for link in existing - set(wanted):
        link.unlink()
    for link, target in wanted.items():
        if link.is_symlink() and Path(os.readlink(link)) == target:
            continue
        if link.is_dir() and not link.is_symlink():
            shutil.rmtree(link)  # was filled file by file, now linked whole
        elif link.is_symlink() or link.exists():
            link.unlink()
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target, target_is_directory=target.is_dir())
    for folder, dirs, files in os.walk(out, topdown=False):
        path = Path(folder)
        if path.parent != out and path != out and not any(path.iterdir()):
            path.rmdir()


def main(argv):
    command = argv[1] if len(argv) > 1 else "check"
    try:
        if command == "check":
            problems = check(argv[2] if len(argv) > 2 else Path(__file__).resolve().parents[1])
            for p in problems:
                print(p)
            if problems:
                print(f"{len(problems)} include(s) break the layering")
                return 1
            return 0
        if command == "targets":
            print("\n".join(load(argv[2] if len(argv) > 2 else ".").order))
            return 0
        if command == "roots" and len(argv) == 5:
            make_roots(argv[2], argv[3], argv[4])
            return 0
    except LayerError as e:
        print(e, file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
