"""Collecting documents to ingest: which files, their external ids and titles, and which files are
skipped and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_local.cli import documents as documents_module
from knowledge_local.cli.documents import DocumentError, collect_documents, title_of
from tests.support.documents import article_html, docx_bytes, encrypted_pdf_bytes, pdf_bytes, xlsx_bytes


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "guide" / "deep").mkdir(parents=True)
    (tmp_path / ".git").mkdir()
    (tmp_path / "index.md").write_text("# Welcome { #welcome }\n\nHello.\n")
    (tmp_path / "guide" / "deep" / "setup.rst").write_text("Setup\n=====\n\nInstall it.\n")
    (tmp_path / "guide" / "notes.txt").write_text("Short notes\nmore text\n")
    (tmp_path / "guide" / "empty.md").write_text("  \n")
    (tmp_path / "guide" / "picture.png").write_bytes(b"\x89PNG")
    (tmp_path / ".git" / "HEAD.md").write_text("# hidden\n")
    return tmp_path


def test_collect_documents_folder_yields_text_files_by_relative_path(tree: Path) -> None:
    documents = collect_documents(tree).documents

    assert [document.external_id for document in documents] == [
        "guide/deep/setup.rst",
        "guide/notes.txt",
        "index.md",
    ]
    assert [document.title for document in documents] == ["Setup", "Short notes", "Welcome"]
    assert documents[2].uri() == "index.md"


def test_document_uri_is_its_relative_path_percent_encoded_under_an_optional_base_url(tmp_path: Path) -> None:
    (tmp_path / "guides").mkdir()
    (tmp_path / "guides" / "HTTP 2.md").write_text("# HTTP/2\n")
    [document] = collect_documents(tmp_path).documents

    assert document.uri() == "guides/HTTP%202.md"
    assert (
        document.uri("https://docs.example.com/site/") == "https://docs.example.com/site/guides/HTTP%202.md"
    )
    assert str(tmp_path) not in document.uri()


def test_document_content_has_lf_line_endings_and_no_byte_order_mark(tmp_path: Path) -> None:
    (tmp_path / "windows.md").write_bytes(b"\xef\xbb\xbf# Title\r\nline one\r\nline two\r\n")

    [document] = collect_documents(tmp_path).documents

    assert document.content == "# Title\nline one\nline two\n"


def test_collect_documents_file_is_relative_to_its_folder_or_the_given_root(tree: Path) -> None:
    alone = collect_documents(tree / "guide" / "notes.txt").documents
    rooted = collect_documents(tree / "guide" / "notes.txt", relative_to=tree).documents

    assert [document.external_id for document in alone] == ["notes.txt"]
    assert [document.external_id for document in rooted] == ["guide/notes.txt"]


def test_collect_documents_missing_path_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="No such file or folder"):
        collect_documents(tmp_path / "absent")


def test_collect_documents_unsupported_file_is_a_document_error(tree: Path) -> None:
    with pytest.raises(DocumentError, match=r"picture\.png"):
        collect_documents(tree / "guide" / "picture.png")


def test_collect_documents_skips_non_utf8_and_blank_files_and_keeps_the_rest(tree: Path) -> None:
    (tree / "latin.txt").write_bytes("café".encode("latin-1"))

    collection = collect_documents(tree)

    assert [document.external_id for document in collection.documents] == [
        "guide/deep/setup.rst",
        "guide/notes.txt",
        "index.md",
    ]
    assert [(file.external_id, file.reason) for file in collection.skipped] == [
        ("guide/empty.md", "empty"),
        ("latin.txt", "not UTF-8 text"),
    ]
    assert collection.external_ids == {
        "guide/deep/setup.rst",
        "guide/notes.txt",
        "index.md",
        "guide/empty.md",
        "latin.txt",
    }


def test_collect_documents_skips_text_over_the_write_api_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents_module, "MAX_CONTENT_CHARS", 20)
    (tmp_path / "short.md").write_text("# Short\n")
    (tmp_path / "long.md").write_text("# Long\n" + "word " * 10)

    collection = collect_documents(tmp_path)

    assert [document.external_id for document in collection.documents] == ["short.md"]
    [skipped] = collection.skipped
    assert skipped.external_id == "long.md"
    assert "over the write API's limit of 20" in skipped.reason


def test_collect_documents_skips_files_too_large_to_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(documents_module, "MAX_CONTENT_CHARS", 4)
    (tmp_path / "huge.txt").write_text("x" * 17)

    collection = collect_documents(tmp_path)

    assert collection.documents == []
    assert "larger than the write API's limit of 4 characters" in collection.skipped[0].reason


def test_collect_documents_never_follows_links_out_of_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    outside.write_text("# Secret\n\nNot part of the docs.\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "guide.md").write_text("# Guide\n\nInside.\n")
    (folder / "alias.md").symlink_to(folder / "guide.md")
    (folder / "leak.md").symlink_to(outside)

    collection = collect_documents(folder)

    assert [document.external_id for document in collection.documents] == ["alias.md", "guide.md"]
    [skipped] = collection.skipped
    assert skipped.path == folder / "leak.md"
    assert skipped.external_id is None
    assert "outside" in skipped.reason
    assert "leak.md" not in collection.external_ids


@pytest.mark.parametrize(
    ("name", "content", "title"),
    [
        ("a.md", "```\n# not a title\n```\n## Real title ##\n", "Real title"),
        ("b.md", "no heading at all\n", "b"),
        ("c.rst", "=====\nTitle\n=====\n", "Title"),
        ("d.txt", "x" * 101 + "\n", "d"),
    ],
)
def test_title_of_picks_the_first_heading_or_the_file_name(name: str, content: str, title: str) -> None:
    assert title_of(Path(name), content) == title


def test_collect_documents_converts_every_format_with_its_segments(tmp_path: Path) -> None:
    (tmp_path / "manual.pdf").write_bytes(pdf_bytes([["Page one"], ["Page two"]], title="Manual"))
    (tmp_path / "locked.pdf").write_bytes(encrypted_pdf_bytes([["secret"]]))
    (tmp_path / "guide.docx").write_bytes(docx_bytes([("h1", "Guide"), ("p", "Body.")]))
    (tmp_path / "page.html").write_bytes(article_html())
    (tmp_path / "rows.csv").write_text("a,b\n1,2\n")
    (tmp_path / "book.xlsx").write_bytes(xlsx_bytes({"Sheet A": [["x", "y"], [1, 2]]}))

    collection = collect_documents(tmp_path)

    documents = {document.external_id: document for document in collection.documents}
    assert sorted(documents) == ["book.xlsx", "guide.docx", "manual.pdf", "page.html", "rows.csv"]
    assert [(file.external_id, file.reason) for file in collection.skipped] == [
        ("locked.pdf", "an encrypted PDF that needs a password")
    ]
    assert documents["manual.pdf"].title == "Manual"
    assert documents["manual.pdf"].segment_fields() == [{"offset": 0, "page": 1}, {"offset": 10, "page": 2}]
    assert documents["page.html"].title == "Tidal Turbines Field Guide"
    assert (documents["rows.csv"].title, documents["book.xlsx"].title) == ("rows", "book")
    assert documents["book.xlsx"].segment_fields()[1] == {
        "offset": documents["book.xlsx"].content.index("| x |"),
        "sheet": "Sheet A",
        "rows": {"first": 2, "last": 2},
    }
    assert "Navigation link" not in documents["page.html"].content
