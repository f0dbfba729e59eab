"""Real documents made in the test: PDF (a minimal writer of text pages), DOCX (python-docx), XLSX
(openpyxl), HTML and CSV text, and hostile ones (an encrypted PDF, a corrupt PDF, a zip bomb)."""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Sequence

import docx
import openpyxl
from pypdf import PdfReader, PdfWriter


def _pdf_string(text: str) -> str:
    return "(" + text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") + ")"


def pdf_bytes(pages: Sequence[Sequence[str]], *, title: str | None = None) -> bytes:
    """A PDF with one page per entry of ``pages``, each line of it drawn in Helvetica (WinAnsi text:
    Latin-1 characters only). A page with no lines has no text, as a scanned page."""
    count = len(pages)
    objects: list[bytes] = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids ["
        + b" ".join(f"{4 + 2 * index} 0 R".encode() for index in range(count))
        + f"] /Count {count} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    for index, lines in enumerate(pages):
        drawn = "".join(f"{_pdf_string(line)} Tj T* " for line in lines)
        stream = f"BT /F1 11 Tf 14 TL 50 780 Td {drawn}ET".encode("latin-1") if lines else b""
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * index} 0 R >>".encode()
        )
        objects.append(f"<< /Length {len(stream)} >>\nstream\n".encode() + stream + b"\nendstream")
    info = None
    if title is not None:
        objects.append(f"<< /Title {_pdf_string(title)} >>".encode("latin-1"))
        info = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def encrypted_pdf_bytes(pages: Sequence[Sequence[str]], password: str = "s3cret") -> bytes:
    """A PDF of ``pages`` encrypted (AES-128) with a user password."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_bytes(pages))))
    writer.encrypt(user_password=password, owner_password=password, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def pdf_stream_bomb_bytes(unpacked_mib: int = 80) -> bytes:
    """A one-page PDF whose content stream (FlateDecode) inflates to ``unpacked_mib`` MiB of spaces
    from well under 1 MiB."""
    compressor = zlib.compressobj(9)
    block = b" " * (1024 * 1024)
    packed = b"".join(compressor.compress(block) for _ in range(unpacked_mib)) + compressor.flush()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R >>",
        f"<< /Length {len(packed)} /Filter /FlateDecode >>\nstream\n".encode() + packed + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def corrupt_pdf_bytes() -> bytes:
    """A PDF header followed by garbage: no objects, no cross-reference table."""
    return b"%PDF-1.7\n" + bytes(range(256)) * 8


def docx_bytes(blocks: Sequence[tuple[str, object]], *, title: str | None = None) -> bytes:
    """A Word document of ``blocks``: ``("h1".."h3", text)``, ``("p", text)``, ``("bullet", text)``,
    ``("number", text)`` or ``("table", rows)`` (the first row the header)."""
    document = docx.Document()
    if title is not None:
        document.core_properties.title = title
    for kind, value in blocks:
        if kind.startswith("h"):
            document.add_heading(str(value), level=int(kind[1]))
        elif kind == "p":
            document.add_paragraph(str(value))
        elif kind == "bullet":
            document.add_paragraph(str(value), style="List Bullet")
        elif kind == "number":
            document.add_paragraph(str(value), style="List Number")
        elif kind == "table":
            rows = list(value)  # type: ignore[call-overload]
            table = document.add_table(rows=len(rows), cols=len(rows[0]))
            for row, cells in zip(table.rows, rows, strict=True):
                for cell, text in zip(row.cells, cells, strict=True):
                    cell.text = str(text)
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def billion_laughs_docx_bytes() -> bytes:
    """A Word document whose body declares nested XML entities that would expand to a billion
    copies of a word (the "billion laughs" attack) and uses the outermost one."""
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{level} "{f"&lol{level - 1};" * 10}">' for level in range(1, 10)
    )
    original = docx_bytes([("p", "placeholder")])
    source = zipfile.ZipFile(io.BytesIO(original))
    body = source.read("word/document.xml").decode().split("?>", 1)[1].replace("placeholder", "&lol9;")
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for info in source.infolist():
            if info.filename == "word/document.xml":
                archive.writestr(info.filename, f'<?xml version="1.0"?><!DOCTYPE w [{entities}]>{body}')
            else:
                archive.writestr(info.filename, source.read(info.filename))
    return out.getvalue()


def xlsx_bytes(sheets: dict[str, Sequence[Sequence[object]]], *, title: str | None = None) -> bytes:
    """A workbook with one sheet per entry, its rows from row 1."""
    workbook = openpyxl.Workbook()
    workbook.remove(workbook.active)  # type: ignore[arg-type]
    if title is not None:
        workbook.properties.title = title
    for name, rows in sheets.items():
        sheet = workbook.create_sheet(name)
        for row in rows:
            sheet.append(list(row))
    out = io.BytesIO()
    workbook.save(out)
    return out.getvalue()


def zip_bomb_bytes(member: str = "word/document.xml", unpacked_mib: int = 64) -> bytes:
    """A zip (named like a DOCX or XLSX by the caller) whose ``member`` inflates to
    ``unpacked_mib`` MiB of zeros from a few hundred KiB."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        with archive.open(member, "w", force_zip64=True) as stream:
            block = bytes(1024 * 1024)
            for _ in range(unpacked_mib):
                stream.write(block)
    return out.getvalue()


ARTICLE_HTML = """<!doctype html>
<html><head><meta charset="utf-8"><title>Tidal Turbines Field Guide</title></head>
<body>
<header><a href="/">Home</a> <a href="/products">Products</a> <a href="/about">About us</a></header>
<nav><ul><li><a href="/a">Navigation link alpha</a></li>
<li><a href="/b">Navigation link beta</a></li></ul></nav>
<main>
<article>
<h1>Tidal Turbines Field Guide</h1>
<p>Tidal turbines convert the kinetic energy of moving seawater into electricity. This guide walks
through the maintenance of the rotor, the nacelle and the subsea cable over a service year.</p>
<h2>Rotor inspection</h2>
<p>Inspect the rotor blades for barnacle fouling every spring; the {rotor} phrase lives here.</p>
<ul><li>Check the pitch bearings</li><li>Measure blade erosion<ul><li>Leading edge first</li></ul></li></ul>
<h2>Subsea cable</h2>
<p>The export cable is buried one metre below the seabed; {cable} is what divers note.</p>
<table><thead><tr><th>Depth</th><th>Burial</th></tr></thead>
<tbody><tr><td>20 m</td><td>1.0 m</td></tr><tr><td>40 m</td><td>1.5 m</td></tr></tbody></table>
</article>
</main>
<aside>Related: sponsored sidebar content about unrelated gadgets.</aside>
<footer>Copyright footer text, privacy policy, cookie settings.</footer>
</body></html>
"""


def article_html(rotor: str = "kelp-covered swivel joints", cable: str = "scour around the cable") -> bytes:
    """A web page with a banner, navigation, an aside and a footer around an article of two
    sections, a nested list and a table; ``rotor`` and ``cable`` are phrases of each section."""
    return ARTICLE_HTML.replace("{rotor}", rotor).replace("{cable}", cable).encode("utf-8")
