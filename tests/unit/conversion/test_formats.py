"""PDF, DOCX, HTML, CSV and XLSX through ``knowledge.conversion.convert``, on files made here."""

from __future__ import annotations

import io

import openpyxl
import pytest

from knowledge.conversion import ConversionError, ConversionLimits, Segment, convert
from knowledge.domain.segments import segment_at
from tests.support.documents import article_html, docx_bytes, pdf_bytes, xlsx_bytes


def _at(document_content: str, segments: tuple[Segment, ...], phrase: str) -> Segment | None:
    return segment_at(segments, document_content.index(phrase))


def test_convert_pdf_pages_become_page_segments() -> None:
    data = pdf_bytes(
        [["Harbour tides and currents", "ebb flow notes"], [], ["Lighthouse keeper rota"]], title="Harbour"
    )
    document = convert("manual.pdf", data)
    assert document.title == "Harbour"
    assert "Harbour tides and currents\nebb flow notes" in document.content
    assert _at(document.content, document.segments, "ebb flow") == Segment(offset=0, page=1)
    assert _at(document.content, document.segments, "Lighthouse").page == 3  # type: ignore[union-attr]
    assert [segment.page for segment in document.segments] == [1, 3]


def test_convert_pdf_without_title_metadata_has_no_title() -> None:
    assert convert("a.pdf", pdf_bytes([["text"]])).title is None


def test_convert_pdf_over_max_pages_is_too_large() -> None:
    with pytest.raises(ConversionError, match="3 pages, over the limit of 2") as raised:
        convert("a.pdf", pdf_bytes([["a"], ["b"], ["c"]]), limits=ConversionLimits(max_pages=2))
    assert raised.value.code == "document_too_large"


def test_convert_docx_headings_lists_and_tables_become_markdown() -> None:
    data = docx_bytes(
        [
            ("h1", "Pump handbook"),
            ("p", "Centrifugal pumps move water."),
            ("bullet", "Prime the casing"),
            ("bullet", "Open the valve"),
            ("number", "Start the motor"),
            ("h2", "Spare parts"),
            ("table", [["Part", "Stock"], ["Impeller", "4"], ["Seal | kit", "9"]]),
        ]
    )
    document = convert("pumps.docx", data)
    assert document.title == "Pump handbook"
    assert document.content == (
        "# Pump handbook\n\nCentrifugal pumps move water.\n\n- Prime the casing\n- Open the valve\n"
        "1. Start the motor\n\n## Spare parts\n\n| Part | Stock |\n|---|---|\n| Impeller | 4 |\n"
        "| Seal \\| kit | 9 |\n"
    )
    assert [segment.section for segment in document.segments] == ["Pump handbook", "Spare parts"]
    assert _at(document.content, document.segments, "Impeller").section == "Spare parts"  # type: ignore[union-attr]


def test_convert_docx_core_title_wins() -> None:
    assert convert("a.docx", docx_bytes([("p", "body")], title="Declared")).title == "Declared"


def test_convert_html_keeps_the_article_without_navigation_or_footer() -> None:
    document = convert("guide.html", article_html())
    assert document.title == "Tidal Turbines Field Guide"
    for boilerplate in ("Navigation link", "About us", "sponsored sidebar", "Copyright footer"):
        assert boilerplate not in document.content
    assert "## Rotor inspection" in document.content
    assert "- Measure blade erosion\n   - Leading edge first" in document.content
    assert "| Depth | Burial |\n|---|---|\n| 20 m | 1.0 m |" in document.content
    assert _at(document.content, document.segments, "swivel joints").section == "Rotor inspection"  # type: ignore[union-attr]
    assert _at(document.content, document.segments, "scour around").section == "Subsea cable"  # type: ignore[union-attr]


def test_convert_html_without_landmarks_uses_readability() -> None:
    page = article_html().decode()
    for landmark in ("main", "article", "aside"):
        page = page.replace(f"<{landmark}>", '<div class="x">').replace(f"</{landmark}>", "</div>")
    document = convert("guide.htm", page.encode())
    assert "swivel joints" in document.content
    assert "Navigation link" not in document.content
    assert _at(document.content, document.segments, "scour around").section == "Subsea cable"  # type: ignore[union-attr]


def test_convert_html_declared_charset_is_decoded() -> None:
    page = '<html><head><meta charset="iso-8859-1"></head><body><main><p>Café crème</p></main></body></html>'
    assert convert("a.html", page.encode("latin-1")).content == "Café crème\n"


def test_convert_html_undecodable_without_charset_is_unreadable() -> None:
    with pytest.raises(ConversionError, match="not UTF-8 and no <meta> charset"):
        convert("a.html", "<p>Café</p>".encode("latin-1"))


def test_convert_html_of_only_navigation_has_no_text() -> None:
    with pytest.raises(ConversionError, match="no extractable text"):
        convert("a.html", b"<html><body><nav><a href='/'>Home</a></nav></body></html>")


def test_convert_csv_blocks_repeat_the_header_with_row_ranges() -> None:
    lines = ["city;population"] + [f"City{number};{number * 1000}" for number in range(1, 31)]
    document = convert("cities.csv", "\n".join(lines).encode(), limits=ConversionLimits(table_block_rows=10))
    assert document.content.count("| city | population |") == 3
    assert [segment.rows for segment in document.segments] == [(2, 11), (12, 21), (22, 31)]
    assert _at(document.content, document.segments, "City15").rows == (12, 21)  # type: ignore[union-attr]


def test_convert_csv_block_size_follows_characters() -> None:
    lines = ["a,b"] + [f"{'x' * 100},{number}" for number in range(10)]
    document = convert("wide.csv", "\n".join(lines).encode(), limits=ConversionLimits(table_block_chars=300))
    assert all(
        segment.rows is not None and segment.rows[1] - segment.rows[0] <= 1 for segment in document.segments
    )


def test_convert_csv_header_only_is_one_table() -> None:
    document = convert("h.csv", b"alpha,beta\n")
    assert document.content == "| alpha | beta |\n|---|---|\n"
    assert document.segments == (Segment(offset=0, rows=(1, 1)),)


def test_convert_xlsx_sheets_become_sections_with_rows() -> None:
    data = xlsx_bytes(
        {
            "Budget": [["Item", "Cost"], ["Pump", 3.0], [None, None], ["Valve", 2.5]],
            "Empty": [],
            "Staff": [["Name", "Role", "Shift"], ["Ada", "Engineer"], ["Grace", "Diver", "night"]],
        },
        title="Plant",
    )
    document = convert("plant.xlsx", data)
    assert document.title == "Plant"
    assert "## Budget\n\n| Item | Cost |\n|---|---|\n| Pump | 3 |\n| Valve | 2.5 |" in document.content
    assert "| Ada | Engineer |  |" in document.content
    assert "Empty" not in document.content
    valve = _at(document.content, document.segments, "Valve")
    assert valve == Segment(offset=valve.offset, sheet="Budget", rows=(2, 4))  # type: ignore[union-attr]
    grace = _at(document.content, document.segments, "Grace")
    assert (grace.sheet, grace.rows) == ("Staff", (2, 3))  # type: ignore[union-attr]


def test_convert_xlsx_rows_are_numbered_as_the_sheet_numbers_them() -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.title = "Crew"
    sheet["B3"], sheet["C3"] = "Name", "Role"
    sheet["B4"], sheet["C4"] = "Ada", "Engineer"
    sheet["B7"], sheet["C7"] = "Grace", "Diver"
    out = io.BytesIO()
    workbook.save(out)
    document = convert("crew.xlsx", out.getvalue())
    grace = _at(document.content, document.segments, "Grace")
    assert grace is not None
    assert (grace.sheet, grace.rows) == ("Crew", (4, 7))
