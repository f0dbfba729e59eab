"""HTML: the page's main content as Markdown, without navigation, banners, footers or asides.

The main content is the page's ``<main>`` (or its single ``<article>``) when it marks one, else
what readability-lxml (Apache-2.0) scores as the article. Before either, the page loses its
``nav``, ``aside``, ``script``, ``style``, ``form`` and ARIA navigation/banner/complementary/
contentinfo landmarks, and the ``header`` and ``footer`` outside an article. The content is then
written by lxml's tree: ``h1``-``h6`` as headings that start ``section`` segments, lists as lists,
tables as tables (the ``th`` row, else the first row, as header), ``pre`` as fenced code, other
blocks as paragraphs. ``<title>`` (else the first heading) is the title.

Bytes are UTF-8, else the charset a ``<meta>`` declares; anything else is undecodable.
"""

from __future__ import annotations

import re

import lxml.html
from lxml import etree
from readability import Document

from knowledge.conversion.limits import ConversionLimits
from knowledge.conversion.markdown import MarkdownWriter, one_line, table_cell
from knowledge.domain.segments import ConvertedDocument
from knowledge.errors import ConversionError

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_BOILERPLATE = "//nav | //aside | //script | //style | //noscript | //template | //form | //iframe"
_LANDMARKS = (
    "//*[@role='navigation' or @role='banner' or @role='complementary' or @role='contentinfo'"
    " or @role='search']"
)
_PAGE_FRAME = "//header[not(ancestor::article or ancestor::main)] | //footer[not(ancestor::article)]"
_HEADINGS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_LISTS = frozenset({"ul", "ol"})
_BLOCKS = frozenset(
    {
        *_HEADINGS,
        *_LISTS,
        "p",
        "div",
        "section",
        "article",
        "main",
        "body",
        "header",
        "footer",
        "table",
        "pre",
        "blockquote",
        "dl",
        "dt",
        "dd",
        "figure",
        "figcaption",
        "hr",
        "li",
        "address",
        "details",
        "summary",
    }
)


def decode_html(data: bytes) -> str:
    """``data`` as text: UTF-8, else its ``<meta>`` charset; ``ConversionError`` otherwise."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    declared = _META_CHARSET.search(data[:4096])
    if declared is None:
        raise ConversionError("not UTF-8 and no <meta> charset declared")
    charset = declared.group(1).decode("ascii")
    try:
        return data.decode(charset)
    except (LookupError, UnicodeDecodeError):
        raise ConversionError(f"not decodable as its declared charset {charset}") from None


def convert_html(data: bytes, limits: ConversionLimits) -> ConvertedDocument:
    """The web page in ``data`` (see the module docs)."""
    text = decode_html(data)
    if not text.strip():
        raise ConversionError("no extractable text")
    try:
        page = lxml.html.document_fromstring(text)
        page_title = one_line(page.findtext(".//title") or "")
        for element in page.xpath(f"{_BOILERPLATE} | {_LANDMARKS} | {_PAGE_FRAME}"):
            element.drop_tree()
        main = _main_content(page)
        writer = MarkdownWriter(limits.max_chars)
        first_heading = _Writer(writer).write(main)
    except ConversionError:
        raise
    except Exception:  # lxml and readability raise their own errors on hostile markup
        raise ConversionError("not readable HTML") from None
    return writer.document(page_title or first_heading)


def _main_content(page: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    marked = page.xpath("//main") or page.xpath("//*[@role='main']") or page.xpath("//article")
    if len(marked) == 1:
        element: lxml.html.HtmlElement = marked[0]
        return element
    body = page.find("body")
    if body is None or not one_line(body.text_content()):
        return page
    summary = Document(lxml.html.tostring(page, encoding="unicode")).summary(html_partial=True)
    article: lxml.html.HtmlElement = lxml.html.fragment_fromstring(summary, create_parent="div")
    return article


class _Writer:
    """Walks an element tree, gathering inline text into paragraphs between block elements."""

    def __init__(self, writer: MarkdownWriter) -> None:
        self._writer = writer
        self._inline: list[str] = []
        self._first_heading: str | None = None

    def write(self, root: lxml.html.HtmlElement) -> str | None:
        """Every block under ``root``; the first heading's text."""
        self._container(root)
        self._flush()
        return self._first_heading

    def _container(self, element: lxml.html.HtmlElement) -> None:
        self._text(element.text)
        for child in element:
            if isinstance(child, etree._Comment | etree._ProcessingInstruction):
                self._text(child.tail)
                continue
            tag = child.tag if isinstance(child.tag, str) else ""
            if tag in _BLOCKS:
                self._flush()
                self._block(child, tag)
            elif tag == "br":
                self._inline.append("\n")
            else:
                self._text(child.text_content())
            self._text(child.tail)

    def _block(self, element: lxml.html.HtmlElement, tag: str) -> None:
        if tag in _HEADINGS:
            heading = one_line(element.text_content())
            if heading:
                self._first_heading = self._first_heading or heading
                self._writer.mark(section=heading)
                self._writer.heading(int(tag[1]), heading)
        elif tag in _LISTS:
            self._writer.block("\n".join(_list_lines(element, 0)))
        elif tag == "table":
            self._table(element)
        elif tag == "pre":
            code = element.text_content().strip("\n")
            fence = "~~~~" if "```" in code else "```"
            self._writer.block(f"{fence}\n{code}\n{fence}")
        elif tag == "blockquote":
            quoted = one_line(element.text_content())
            self._writer.block(f"> {quoted}" if quoted else "")
        elif tag == "hr":
            return
        else:
            self._container(element)
            self._flush()

    def _table(self, table: lxml.html.HtmlElement) -> None:
        rows = [
            [table_cell(cell.text_content()) for cell in row.xpath("./th | ./td")]
            for row in table.xpath("./tr | ./thead/tr | ./tbody/tr | ./tfoot/tr")
        ]
        rows = [row for row in rows if any(row)]
        if rows:
            self._writer.table(rows[0], rows[1:])

    def _text(self, text: str | None) -> None:
        # Line breaks in markup are spaces; only <br> breaks a line.
        if text:
            self._inline.append(text.replace("\n", " "))

    def _flush(self) -> None:
        lines = [one_line(line) for line in "".join(self._inline).split("\n")]
        self._inline = []
        self._writer.block("\n".join(line for line in lines if line))


def _list_lines(element: lxml.html.HtmlElement, depth: int) -> list[str]:
    """A list's items as Markdown list lines, nested lists indented under their item."""
    lines: list[str] = []
    marker = "1." if element.tag == "ol" else "-"
    for item in element.xpath("./li"):
        nested = item.xpath("./ul | ./ol")
        for each in nested:
            each.getparent().remove(each)
        text = one_line(item.text_content())
        if text:
            lines.append(f"{'   ' * depth}{marker} {text}")
        for each in nested:
            lines.extend(_list_lines(each, depth + 1))
    return lines
