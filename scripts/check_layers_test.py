#!/usr/bin/env python3
"""Tests of scripts/check_layers.py on small trees written to a temporary directory (ctest
`layering_check_test`): the check must fail on an include that points up or sideways."""

import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import check_layers  # noqa: E402

LAYERS = """
# lowest first
low     owns low/
mid     owns mid/  uses low
side    owns side/ uses low
top     owns mid/top_*
        uses mid
"""


class Tree:
    def __init__(self, root, layers=LAYERS):
        self.root = Path(root)
        self.write("src/layers.txt", layers)

    def write(self, rel, text):
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path


class CheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.tree = Tree(self.tmp.name)
        t = self.tree
        t.write("src/low/l.h", "#pragma once\n#include <vector>\n")
        t.write("src/low/l.cc", '#include "low/l.h"\n')
        t.write("src/mid/m.h", '#pragma once\n#include "low/l.h"\n')
        t.write("src/mid/m.cc", '#include "mid/m.h"\n#include "nereid/status.h"\n')
        t.write("src/side/s.h", '#include "low/l.h"\n')
        t.write("src/mid/top_v.h", '#include "mid/m.h"\n#include "low/l.h"\n')

    def tearDown(self):
        self.tmp.cleanup()

    def check(self):
        return check_layers.check(self.tmp.name)

    def test_downward_includes_pass(self):
        self.assertEqual(self.check(), [])
        with redirect_stdout(io.StringIO()):
            self.assertEqual(check_layers.main(["x", "check", self.tmp.name]), 0)

    def test_include_pointing_up_fails(self):
        self.tree.write("src/low/bad.cc", '#include "low/l.h"\n  #  include "mid/m.h"\n')
        problems = self.check()
        self.assertEqual(len(problems), 1)
        self.assertIn("src/low/bad.cc:2:", problems[0])
        self.assertIn('"mid/m.h" of mid, which low does not use: the include points up',
                      problems[0])
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(check_layers.main(["x", "check", self.tmp.name]), 1)
        self.assertIn("1 include(s) break the layering", out.getvalue())

    def test_include_pointing_sideways_fails(self):
        self.tree.write("src/side/s.cc", '#include "side/s.h"\n#include "mid/m.h"\n')
        problems = self.check()
        self.assertEqual(len(problems), 1)
        self.assertIn("which side does not use: the include points sideways", problems[0])
        # and the other way round
        self.tree.write("src/mid/x.cc", '#include "side/s.h"\n')
        self.assertTrue(any("src/mid/x.cc:1:" in p and "points sideways" in p
                            for p in self.check()))

    def test_glob_beats_folder_both_ways(self):
        # mid/top_v.h belongs to top: mid may not include it, top may include mid.
        self.tree.write("src/mid/m2.cc", '#include "mid/top_v.h"\n')
        problems = self.check()
        self.assertEqual(len(problems), 1)
        self.assertIn('"mid/top_v.h" of top, which mid does not use: the include points up',
                      problems[0])

    def test_include_beside_the_file_is_resolved_as_the_compiler_does(self):
        self.tree.write("src/low/rel.cc", '#include "../mid/m.h"\n')
        self.assertEqual(len(self.check()), 1)

    def test_unowned_file_fails(self):
        self.tree.write("src/stray/x.cc", "int x;\n")
        self.assertEqual(self.check(), ["src/stray/x.cc: no library in src/layers.txt owns this file"])

    def test_transitive_use_is_allowed(self):
        self.tree.write("src/mid/top_w.cc", '#include "low/l.h"\n')  # top -> mid -> low
        self.assertEqual(self.check(), [])


class DeclarationTest(unittest.TestCase):
    def test_use_of_a_later_or_unknown_target_is_refused(self):
        with self.assertRaisesRegex(check_layers.LayerError, "uses b, which is not declared above"):
            check_layers.Layers("a owns a/ uses b\nb owns b/\n")

    def test_two_globs_on_one_file_are_refused(self):
        layers = check_layers.Layers("a owns x/a* \nb owns x/ab*\n")
        with self.assertRaisesRegex(check_layers.LayerError, "claimed by a and b"):
            layers.owner("x/abc.h")

    def test_bad_syntax_is_refused(self):
        with self.assertRaisesRegex(check_layers.LayerError, "expected 'owns' or 'uses'"):
            check_layers.Layers("a b/\n")
        with self.assertRaisesRegex(check_layers.LayerError, "declared twice"):
            check_layers.Layers("a owns a/\na owns b/\n")


class RootsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        root = Path(self.tmp.name)
        self.tree = Tree(root)
        for rel in ("src/low/l.h", "src/low/sub/k.h", "src/mid/m.h", "src/mid/top_v.h",
                    "src/side/s.h"):
            self.tree.write(rel, "#pragma once\n")
        self.src = root / "src"
        self.out = root / "build" / "include_roots"

    def tearDown(self):
        self.tmp.cleanup()

    def manifest(self, lines):
        return self.tree.write("build/manifest.txt", "".join("\t".join(l) + "\n" for l in lines))

    def good_lines(self):
        s = str(self.src)
        return [("low", "STATIC_LIBRARY", f"{s}/low", "l.cc", ""),
                ("mid", "STATIC_LIBRARY", s, "mid/m.cc", "low;Threads::Threads"),
                ("side", "STATIC_LIBRARY", s, "", "low"),
                ("top", "STATIC_LIBRARY", s, f"{s}/mid/top_v.cc", "mid")]

    def test_each_root_holds_only_its_own_headers(self):
        check_layers.make_roots(self.tmp.name, self.manifest(self.good_lines()), self.out)
        low = self.out / "low" / "low"
        self.assertTrue(low.is_symlink())  # the whole folder: nobody else owns anything in it
        self.assertTrue((low / "sub" / "k.h").is_file())
        self.assertFalse((self.out / "mid" / "mid").is_symlink())  # shared with top: per file
        self.assertTrue((self.out / "mid" / "mid" / "m.h").is_symlink())
        self.assertFalse((self.out / "mid" / "mid" / "top_v.h").exists())
        self.assertTrue((self.out / "top" / "mid" / "top_v.h").is_symlink())
        self.assertFalse((self.out / "top" / "mid" / "m.h").exists())
        # Again after a header moved from mid to top: stale links go, the rest stays.
        (self.src / "mid" / "m.h").rename(self.src / "mid" / "top_m.h")
        check_layers.make_roots(self.tmp.name, self.manifest(self.good_lines()), self.out)
        self.assertFalse(os.path.lexists(self.out / "mid" / "mid" / "m.h"))
        self.assertTrue((self.out / "top" / "mid" / "top_m.h").is_file())
        self.assertTrue(low.is_symlink())
        # And when top's glob goes away, mid's folder is linked whole again.
        self.tree.write("src/layers.txt", LAYERS.replace("owns mid/top_*", "owns top/"))
        lines = [l for l in self.good_lines() if l[0] != "top"] + [
            ("top", "STATIC_LIBRARY", str(self.src), "", "mid")]
        check_layers.make_roots(self.tmp.name, self.manifest(lines), self.out)
        self.assertTrue((self.out / "mid" / "mid").is_symlink())
        self.assertTrue((self.out / "mid" / "mid" / "top_m.h").is_file())

    def test_source_compiled_into_the_wrong_library_fails(self):
        lines = self.good_lines()
        lines[1] = ("mid", "STATIC_LIBRARY", str(self.src), "mid/m.cc;mid/top_x.cc", "low")
        with self.assertRaisesRegex(check_layers.LayerError,
                                    "src/mid/top_x.cc is compiled into mid but src/layers.txt "
                                    "gives it to top"):
            check_layers.make_roots(self.tmp.name, self.manifest(lines), self.out)

    def test_link_up_or_sideways_fails(self):
        lines = self.good_lines()
        lines[0] = ("low", "STATIC_LIBRARY", str(self.src), "", "mid")
        lines[2] = ("side", "STATIC_LIBRARY", str(self.src), "", "low;mid")
        with self.assertRaises(check_layers.LayerError) as caught:
            check_layers.make_roots(self.tmp.name, self.manifest(lines), self.out)
        self.assertIn("low links mid, which it does not use in src/layers.txt: the link points up",
                      str(caught.exception))
        self.assertIn("side links mid, which it does not use in src/layers.txt: the link points "
                      "sideways", str(caught.exception))

    def test_declared_target_missing_from_the_build_fails(self):
        with self.assertRaisesRegex(check_layers.LayerError, "declares side, which the build"):
            check_layers.make_roots(self.tmp.name,
                                    self.manifest([l for l in self.good_lines() if l[0] != "side"]),
                                    self.out)


if __name__ == "__main__":
    unittest.main()
