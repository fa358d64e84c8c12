#!/usr/bin/env python3
"""Unit test of scripts/docs-tables on a scratch tree: the contention tables from a fixture of
bench/run-contention-rounds' format (tests/apps/data/contention_rounds_fixture.json: invented
numbers, never copied into bench/results/), the placeholder for a missing source, and --check
naming a stale block.

    docs_tables_test.py [SCRIPT]      (default: scripts/docs-tables of this tree)
"""
import importlib.machinery
import importlib.util
import io
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPT = (Path(sys.argv.pop(1)) if len(sys.argv) > 1 and not sys.argv[1].startswith("-")
          else HERE.parent.parent / "scripts" / "docs-tables")
FIXTURE = HERE / "data" / "contention_rounds_fixture.json"


def load_script():
    loader = importlib.machinery.SourceFileLoader("docs_tables", str(SCRIPT))
    spec = importlib.util.spec_from_loader("docs_tables", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


docs_tables = load_script()

README = """# title

<!-- generated: contention-headline -->
stale
<!-- /generated -->

text after
"""


class DocsTables(unittest.TestCase):
    def setUp(self):
        self.root = Path(tempfile.mkdtemp())
        (self.root / "bench" / "results").mkdir(parents=True)
        (self.root / "README.md").write_text(README, encoding="utf-8")

    def tearDown(self):
        shutil.rmtree(self.root)

    def run_script(self, *args):
        out, err = io.StringIO(), io.StringIO()
        ctx = docs_tables.Context(self.root, None)
        code = docs_tables.process(ctx, "--check" in args, "--require-all" in args, out, err)
        return code, out.getvalue(), err.getvalue()

    def with_fixture(self):
        shutil.copy(FIXTURE, self.root / "bench" / "results" / "contention_rounds.json")

    def test_headline_rows_and_ratio(self):
        self.with_fixture()
        text = docs_tables.contention_headline(docs_tables.Context(self.root, None))
        rows = [line for line in text.splitlines() if line.startswith("| ")]
        self.assertEqual(rows[0], "| point | signet | signet_blocking | moodycamel | "
                                  "moodycamel_bulk | signet / best queue | signet task CoV |")
        self.assertEqual([r.split(" | ")[0] for r in rows[1:]],
                         ["| max 1T", "| max 2T", "| high 1T", "| high 2T", "| low 1T",
                          "| low 2T"])
        # max 1T: signet 100 M/s, best queue moodycamel_bulk 50 M/s -> 2.00x.
        self.assertEqual(rows[1], "| max 1T | 100.0 | 90.0 | 40.0 | 50.0 | 2.00x | 0.001 |")
        self.assertEqual(rows[6], "| low 2T | 2.00 | 1.80 | 0.80 | 1.00 | 2.00x | 0.001 |")
        self.assertIn("Medians of 3 interleaved rounds of `FIXTURE signet_contention_bench", text)
        self.assertIn("Machine: FIXTURE", text)

    def test_rounds_table_lists_each_round(self):
        self.with_fixture()
        text = docs_tables.contention_rounds(docs_tables.Context(self.root, None))
        self.assertIn("| max 1T | 100.0 | 90.0 | 40.0 | 50.0 | 2.00x | 0.001 | 0.01 | "
                      "90.0 / 100.0 / 110.0 | 0 |", text)

    def test_missing_source_is_a_placeholder(self):
        code, _, err = self.run_script()
        self.assertEqual(code, 0, err)
        text = (self.root / "README.md").read_text(encoding="utf-8")
        self.assertIn("<!-- generated: contention-headline -->\n(not measured yet: run "
                      "`bench/run-contention-rounds`)\n\n<!-- /generated -->", text)
        self.assertTrue(text.endswith("text after\n"))
        code, _, err = self.run_script("--check")
        self.assertEqual(code, 0, err)
        code, _, err = self.run_script("--check", "--require-all")
        self.assertEqual(code, 1)
        self.assertIn("contention-headline", err)
        self.assertIn("contention_rounds.json is missing", err)

    def test_check_names_a_stale_block(self):
        self.with_fixture()
        code, _, err = self.run_script("--check")
        self.assertEqual(code, 1)
        self.assertIn("README.md: block 'contention-headline' differs", err)
        self.assertIn("stale", (self.root / "README.md").read_text(encoding="utf-8"))
        code, out, err = self.run_script()
        self.assertEqual(code, 0, err)
        self.assertIn("updated README.md", out)
        code, _, err = self.run_script("--check", "--require-all")
        self.assertEqual(code, 0, err)

    def test_unknown_block_is_an_error(self):
        (self.root / "README.md").write_text("<!-- generated: nonsense -->\n<!-- /generated -->\n",
                                             encoding="utf-8")
        code, _, err = self.run_script("--check")
        self.assertEqual(code, 1)
        self.assertIn("unknown generated block 'nonsense'", err)


if __name__ == "__main__":
    unittest.main()
