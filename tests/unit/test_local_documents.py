"""Collecting documents to ingest: which files, their external ids and titles."""

from __future__ import annotations

from pathlib import Path

import pytest

from knowledge_local.documents import DocumentError, collect_documents, title_of


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
    documents = collect_documents(tree)

    assert [document.external_id for document in documents] == [
        "guide/deep/setup.rst",
        "guide/notes.txt",
        "index.md",
    ]
    assert [document.title for document in documents] == ["Setup", "Short notes", "Welcome"]
    assert documents[2].uri == (tree / "index.md").resolve().as_uri()


def test_collect_documents_file_is_relative_to_its_folder_or_the_given_root(tree: Path) -> None:
    alone = collect_documents(tree / "guide" / "notes.txt")
    rooted = collect_documents(tree / "guide" / "notes.txt", relative_to=tree)

    assert [document.external_id for document in alone] == ["notes.txt"]
    assert [document.external_id for document in rooted] == ["guide/notes.txt"]


def test_collect_documents_missing_path_is_a_document_error(tmp_path: Path) -> None:
    with pytest.raises(DocumentError, match="No such file or folder"):
        collect_documents(tmp_path / "absent")


def test_collect_documents_unsupported_file_is_a_document_error(tree: Path) -> None:
    with pytest.raises(DocumentError, match=r"picture\.png"):
        collect_documents(tree / "guide" / "picture.png")


def test_collect_documents_non_utf8_file_is_a_document_error(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))

    with pytest.raises(DocumentError, match="not UTF-8"):
        collect_documents(tmp_path)


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
