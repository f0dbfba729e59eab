"""Document conversion throughput per format (``knowledge.conversion.convert``) on generated files.

```sh
python -m bench.conversion                 # every format, 5 runs each, median
python -m bench.conversion --runs 3 pdf xlsx
```

Each format gets one generated document of realistic shape (``tests.support.documents`` writes the
PDF, Word and Excel files): a 100-page text PDF (45 lines a page), a Word document of 100 sections
(heading, five paragraphs, a 10-row table), a web page of 100 sections with navigation and a footer
around the article, a CSV and a workbook of 20,000 rows by 6 columns, and a Markdown file of 100
sections. The table gives per format the input size, the converted Markdown's characters, the
median seconds of ``--runs`` conversions, documents/s, input MB/s, and pages/s: PDF pages for PDF,
for the others pages of 3,000 characters of converted text (about a printed page), so formats
compare. Peak memory (``tracemalloc``) of one conversion is shown beside. Figures on a shared
machine are noisy; the JSON lands in ``docs/benchmarks/conversion.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

from knowledge.conversion import convert
from tests.support.documents import docx_bytes, pdf_bytes, xlsx_bytes

PAGE_CHARS = 3_000
SECTIONS = 100
ROWS = 20_000
WORDS = [
    "harbour",
    "tide",
    "vessel",
    "berth",
    "crane",
    "winch",
    "cable",
    "rotor",
    "turbine",
    "nacelle",
    "ledger",
    "foghorn",
    "lens",
    "beacon",
    "anchor",
    "keel",
    "hull",
    "deck",
    "mast",
    "sail",
    "rudder",
    "compass",
    "chart",
    "buoy",
    "pilot",
    "dredge",
    "basin",
    "quay",
    "pier",
]
OUT = Path("docs/benchmarks/conversion.json")


def _sentence(seed: int, words: int = 12) -> str:
    chosen = [WORDS[(seed * 7 + index * 13) % len(WORDS)] for index in range(words)]
    return " ".join(chosen).capitalize() + "."


def _paragraph(seed: int) -> str:
    return " ".join(_sentence(seed + index) for index in range(5))


def make_pdf() -> tuple[str, bytes, int]:
    pages = [[_sentence(page * 100 + line)[:90] for line in range(45)] for page in range(SECTIONS)]
    return "bench.pdf", pdf_bytes(pages, title="Bench"), SECTIONS


def make_docx() -> tuple[str, bytes, int]:
    blocks: list[tuple[str, object]] = []
    for section in range(SECTIONS):
        blocks.append(("h2", f"Section {section} {WORDS[section % len(WORDS)]}"))
        blocks += [("p", _paragraph(section * 10 + index)) for index in range(5)]
        blocks.append(
            ("table", [["Part", "Interval", "Owner"]] + [[f"P{row}", "weekly", "crew"] for row in range(10)])
        )
    return "bench.docx", docx_bytes(blocks), 0


def make_html() -> tuple[str, bytes, int]:
    sections = "".join(
        f"<h2>Section {section}</h2>"
        + "".join(f"<p>{_paragraph(section * 10 + index)}</p>" for index in range(5))
        + "<ul>"
        + "".join(f"<li>{_sentence(section + item, 6)}</li>" for item in range(4))
        + "</ul>"
        for section in range(SECTIONS)
    )
    page = (
        "<html><head><title>Bench</title></head><body><nav><a href='/'>Home</a></nav>"
        f"<main><article><h1>Bench</h1>{sections}</article></main><footer>Footer</footer></body></html>"
    )
    return "bench.html", page.encode(), 0


def _rows() -> list[list[object]]:
    header: list[object] = ["id", "vessel", "berth", "cargo", "tonnes", "note"]
    return [header] + [
        [row, f"Vessel{row}", row % 40, WORDS[row % len(WORDS)], row * 3.5, _sentence(row, 5)]
        for row in range(ROWS)
    ]


def make_csv() -> tuple[str, bytes, int]:
    lines = [",".join(str(cell) for cell in row) for row in _rows()]
    return "bench.csv", ("\n".join(lines) + "\n").encode(), 0


def make_xlsx() -> tuple[str, bytes, int]:
    return "bench.xlsx", xlsx_bytes({"Berths": _rows()}), 0


def make_markdown() -> tuple[str, bytes, int]:
    text = "\n\n".join(
        f"## Section {section}\n\n" + "\n\n".join(_paragraph(section * 10 + index) for index in range(5))
        for section in range(SECTIONS)
    )
    return "bench.md", f"# Bench\n\n{text}\n".encode(), 0


FORMATS: dict[str, Callable[[], tuple[str, bytes, int]]] = {
    "pdf": make_pdf,
    "docx": make_docx,
    "html": make_html,
    "csv": make_csv,
    "xlsx": make_xlsx,
    "md": make_markdown,
}


def measure(kind: str, runs: int) -> dict[str, float | int | str]:
    name, data, pdf_pages = FORMATS[kind]()
    tracemalloc.start()
    document = convert(name, data)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        convert(name, data)
        seconds.append(time.perf_counter() - started)
    median = statistics.median(seconds)
    pages = pdf_pages or len(document.content) / PAGE_CHARS
    return {
        "format": kind,
        "input_bytes": len(data),
        "output_chars": len(document.content),
        "segments": len(document.segments),
        "pages": round(pages, 1),
        "seconds": round(median, 4),
        "documents_per_second": round(1 / median, 2),
        "mb_per_second": round(len(data) / 1e6 / median, 2),
        "pages_per_second": round(pages / median, 1),
        "peak_mib": round(peak / 2**20, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "formats", nargs="*", help=f"formats to convert (default: all of {', '.join(FORMATS)})"
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--out", type=Path, default=OUT)
    arguments = parser.parse_args(argv)
    rows = []
    unknown = set(arguments.formats) - set(FORMATS)
    if unknown:
        parser.error(f"unknown formats {', '.join(sorted(unknown))}; choose from {', '.join(FORMATS)}")
    for kind in arguments.formats or FORMATS:
        print(f"converting {kind}...", file=sys.stderr, flush=True)
        rows.append(measure(kind, arguments.runs))
    print(
        "| format | input | text chars | segments | pages | s (median) | docs/s | MB/s | pages/s | peak MiB |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['format']} | {int(row['input_bytes']) / 1e6:.2f} MB | {int(row['output_chars']):,} | "
            f"{row['segments']} | {row['pages']} | {row['seconds']} | {row['documents_per_second']} | "
            f"{row['mb_per_second']} | {row['pages_per_second']} | {row['peak_mib']} |"
        )
    arguments.out.parent.mkdir(parents=True, exist_ok=True)
    arguments.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
