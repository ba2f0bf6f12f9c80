"""Long tables in generated pages: the first rows in the page, every row in `.js` data files loaded on demand.

A model with 20,000 nodes has 20,000 rows in a profile page's layer table and as many in its layer details and
in the compare page's kernel table: inline, that made a 27 MB page a browser took over a minute to open. Every
Markdown table of a generated page with more than LONG_TABLE_ROWS rows keeps its header and first PAGE_ROWS
rows in the page (readable without JavaScript, and what the search index sees); all its rows go into data files
of CHUNK_ROWS rows each beside the page. site_templates/assets/perfsite-tables.js adds buttons that turn the
table's pages, loading a data file with a script tag the first time one of its rows is shown: a script tag (not
`fetch`) so that the site also works opened from disk (file://), where fetch is refused.

The rows stay rendered by the page templates (one route for what a cell says): this module only moves rendered
Markdown rows into data files, turning each cell into HTML. Cells hold text the templates escaped with
md_text (every HTML and Markdown special character as a character reference) and the templates' own
emphasis and code spans, so the conversion only has to handle `**`, `*` and backticks; any other `<` or `>` is
escaped, so a data file cannot carry markup into the page.
"""

from __future__ import annotations

import json
import re
from pathlib import PurePosixPath

LONG_TABLE_ROWS = 500  # more rows than this and a table is paged
PAGE_ROWS = 100  # rows per page of a paged table, the first page inline
CHUNK_ROWS = 2000  # rows per data file (a few hundred KB)

_ROW = re.compile(r"^( *)\|.*\|[ \t]*$")
_SEPARATOR = re.compile(r"^ *\|(?: *:?-+:? *\|)+[ \t]*$")
_ALLOWED_TAG = re.compile(r"(</?(?:code|strong|em|br)>)")
_STRONG = re.compile(r"\*\*(.+?)\*\*")
_EM = re.compile(r"(?<![\w*])\*(?![\s*])(.+?)(?<![\s*])\*(?![\w*])")
_CODE = re.compile(r"`([^`]+)`")
_MARKUP = re.compile(r"[<>*`]")


def page_long_tables(markdown: str, page_path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The page with each long table cut to its first PAGE_ROWS rows plus a pager, and the data files (path
    in the docs folder, text) that hold all its rows. Pages without long tables come back unchanged."""
    lines = markdown.split("\n")
    out: list[str] = []
    files: list[tuple[str, str]] = []
    i, tables = 0, 0
    while i < len(lines):
        match = _ROW.match(lines[i])
        if not match:
            out.append(lines[i])
            i += 1
            continue
        end = _table_end(lines, i, match.group(1))
        block = lines[i:end]
        if len(block) - 2 > LONG_TABLE_ROWS and _SEPARATOR.match(block[1]) and not _has_links(block):
            tables += 1
            table_id = f"{PurePosixPath(page_path).stem}.table-{tables}"
            kept, data = _paged(block, match.group(1), page_path, table_id)
            out += kept
            files += data
        else:
            out += block
        i = end
    return ("\n".join(out), tuple(files)) if files else (markdown, ())


def _has_links(block: list[str]) -> bool:
    """Whether the table links pages: mkdocs rewrites a Markdown link for the site's URL style, which a data
    file's HTML cannot follow, so such a table (a list of versions or experiments, never thousands of rows)
    stays whole."""
    return any("](" in row for row in block[2:])


def _table_end(lines: list[str], start: int, indent: str) -> int:
    end = start
    while end < len(lines) and lines[end].startswith(indent + "|") and _ROW.match(lines[end]):
        end += 1
    return end


def _paged(block: list[str], indent: str, page_path: str, table_id: str) -> tuple[list[str], list[tuple[str, str]]]:
    """The table's header and first page, the pager's placeholder and a paragraph linking the data files
    (Markdown links, so mkdocs rewrites them for any `use_directory_urls`; the script reads their href)."""
    header, rows = block[:2], block[2:]
    folder = PurePosixPath(page_path).parent
    files, links = [], []
    for k, start in enumerate(range(0, len(rows), CHUNK_ROWS)):
        name = f"{table_id}.{k}.js"
        cells = [row_cells(row) for row in rows[start:start + CHUNK_ROWS]]
        text = f"perfsiteLongTable({json.dumps(table_id)}, {k}, {json.dumps(cells, separators=(',', ':'))});\n"
        files.append(((folder / name).as_posix(), text))
        links.append(f"[{start + 1:,}–{min(start + CHUNK_ROWS, len(rows)):,}]({name})")
    shown = min(PAGE_ROWS, len(rows))
    placeholder = (f'{indent}<div class="perfsite-long-table" data-table="{table_id}" data-rows="{len(rows)}" '
                   f'data-page-rows="{PAGE_ROWS}" data-chunk-rows="{CHUNK_ROWS}"></div>')
    note = (f"{indent}Rows 1–{shown:,} of {len(rows):,} are shown; the buttons above turn the table's pages, and "
            f"sorting by a column sorts the rows shown. All rows, as data files: {', '.join(links)}.")
    return [*header, *rows[:shown], "", placeholder, "", note], files


def row_cells(row: str) -> list[str]:
    """One rendered Markdown table row as HTML cells. Cells cannot hold a raw `|`: md_text writes it as a
    character reference."""
    cells = row.strip().strip("|").split("|")
    if not _MARKUP.search(row):  # most rows: one scan of the row rather than one per cell (cell_html's test)
        return [cell.strip() for cell in cells]
    return [cell_html(cell) for cell in cells]


def cell_html(cell: str) -> str:
    """A rendered Markdown cell as HTML: the templates' emphasis and code spans become tags; any other `<`
    or `>` is escaped (character references from md_text stay as they are)."""
    text = cell.strip()
    if not _MARKUP.search(text):  # most cells: a number, or text md_text escaped
        return text
    parts = _ALLOWED_TAG.split(text)
    text = "".join(p if _ALLOWED_TAG.fullmatch(p) else p.replace("<", "&lt;").replace(">", "&gt;") for p in parts)
    text = _CODE.sub(r"<code>\1</code>", text)
    text = _STRONG.sub(r"<strong>\1</strong>", text)
    return _EM.sub(r"<em>\1</em>", text)
