"""generator.site.fast_paths: the faster paths through Python-Markdown's inline processing and Material's search
parser give the same HTML and the same search sections as the released code, and are taken for perfsite's own
configuration with the installed releases (a failure there after an upgrade: check the new release's code and
the hashes and patterns in fast_paths)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import markdown
import pytest
from markdown.treeprocessors import InlineProcessor
from material.plugins.search import plugin as search_plugin
from mkdocs.plugins import PluginCollection

from generator.site import fast_paths
from generator.site.build import REQUIRED_EXTENSIONS, _read_config
from generator.site.fast_paths import PATTERNS
from generator.site.pages import templates_dir

PAGE = """\
# A report &amp; its *figures*

Intro with *emphasis*, **strong**, ***both***, _under_ and __under__, a_snake_name, 2 * 3 * 4, `code & <b>`,
``a ` tick``, \\*escaped\\*, \\| a pipe, [a link](other.md#x "title"), [a reference][ref], ![an image](i.png),
<https://example.org>, <someone@example.org>, <span class="x">inline html</span>, &#95;, &copy;, &#x41;, & alone,
an HTML abbreviation, a hard\x20\x20
line break and a placeholder-looking \u0002klzzwxh:0000\u0003 text.

[ref]: https://example.org/ref

*[HTML]: Hyper Text Markup Language

## A table { #the-table }

| Node | Name | ms | Share |
|---|---|--:|--:|
| 12 | /blocks/layer.53/MatMul&#95;1 | 7,375 | 0.2% |
| 1,118 | plain name | 7,348 | **3.1%** |
| `Conv` | [linked](#the-table) | 1 &lt; 2 | HTML |
| 5 | a&#92;x1b&#91;2J | — | *n/a* |
| 6 | __strong under__ | a `b` | [ref] |

!!! note "A note with `code`"
    Text in an admonition, with an HTML abbreviation.

<div markdown>
Inside **md_in_html** with 42 plain.
</div>

=== "Tab one"

    In a tab: 1 2 3.

??? info "Details"
    Hidden details.

```python
a = b * c  # not emphasis
```

### Plain heading 42

Just words and numbers 1 2 3 and more words.
"""

# Raw HTML that takes the search parser's other branches: excluded and nested elements, scripts, <pre>, a
# heading in a <div>, a heading without id, void and self-closing tags, a permalink in a heading, empty tags.
HTML_EXTRA = """
<div data-search-exclude><p>hidden <b>text</b></p><div>nested div</div></div><div><p>div after</p></div>
<script>var x = "<p>";</script><style>p {}</style><object><p>obj</p></object>
<pre><code>line one
  line two</code><span>  </span><span>\n</span>x</pre><p><span>  </span><span> </span>y</p>
<div><h3 id="in-div">In a <code>div</code><a class="headerlink" href="#in-div">¶</a></h3><p>text</p></div>
<p>after the div</p><h4>no id</h4><p>text<br>more<img src="x.png"><span/></p><p> </p><ul><li> </li></ul>
<table class="linenodiv"><tr><td>1</td></tr></table><p>last &amp; &lt;escaped&gt;</p><sub>2</sub>
"""


def _perfsite_markdown(*more: str) -> markdown.Markdown:
    """A Markdown converter with the extensions of perfsite's packaged mkdocs.yml (and `more`)."""
    names, configs = [], {}
    for item in [*_read_config(templates_dir() / "mkdocs.base.yml")["markdown_extensions"], *REQUIRED_EXTENSIONS,
                 *more]:
        name, config = next(iter(item.items())) if isinstance(item, dict) else (item, None)
        names += [name] if name not in names else []
        configs.update({name: config} if config else {})
    return markdown.Markdown(extensions=names, extension_configs=configs)


def _convert(md: markdown.Markdown, text: str) -> tuple[str, Any]:
    md.reset()
    return md.convert(text), getattr(md, "toc_tokens", None)


@pytest.fixture
def fast(monkeypatch):
    for owner, name, value in fast_paths.fast_paths():
        monkeypatch.setattr(owner, name, value)


def _released_markdown(monkeypatch) -> None:
    monkeypatch.setattr(InlineProcessor, "run", fast_paths._original_run)
    monkeypatch.setattr(InlineProcessor, "_InlineProcessor__handleInline", fast_paths._original_handle_inline)


def test_the_inline_fast_path_converts_a_page_to_the_same_html(fast, monkeypatch):
    md = _perfsite_markdown()
    assert fast_paths.known_inline_loop() and fast_paths.pattern_needs(md.inlinePatterns) is not None
    tried, apply = [], InlineProcessor._InlineProcessor__applyPattern
    monkeypatch.setattr(InlineProcessor, "_InlineProcessor__applyPattern", lambda processor, pattern, data, *rest:
                        tried.append((data, pattern.compiled_re.pattern)) or apply(processor, pattern, data, *rest))
    quick = _convert(md, PAGE)
    assert md.treeprocessors["inline"].perfsite_needs is not None
    # No pattern tried on a plain text, only the entity pattern on a text whose only markup is an entity.
    assert not [regex for data, regex in tried if data in ("Just words and numbers 1 2 3 and more words.", "7,375")]
    assert [regex for data, regex in tried if data == "/blocks/layer.53/MatMul&#95;1"] == [PATTERNS["entity"][1]]
    assert [regex for data, regex in tried if data == "**3.1%**"] == [PATTERNS["em_strong"][1]]
    monkeypatch.undo()
    _released_markdown(monkeypatch)
    released = _convert(_perfsite_markdown(), PAGE)
    assert quick == released
    assert "<abbr" in released[0] and "<em>emphasis</em>" in released[0] and "<table>" in released[0]


def test_inline_code_spans_of_pymdownx_inlinehilite_keep_the_fast_path(fast, monkeypatch):
    """This project's mkdocs.yml (make demo) highlights inline code with pymdownx.inlinehilite, whose pattern
    replaces Markdown's backtick one with the same regex."""
    extensions = ("pymdownx.highlight", "pymdownx.inlinehilite", "def_list")
    page = PAGE + "\n`#!python print(1)`, `plain & <code>` and \\`not code\\`\n\nTerm\n:   its `definition`\n"
    md = _perfsite_markdown(*extensions)
    quick = _convert(md, page)
    assert md.treeprocessors["inline"].perfsite_needs is not None
    _released_markdown(monkeypatch)
    assert quick == _convert(_perfsite_markdown(*extensions), page)
    assert '<code class="highlight"><span class="nb">print</span>' in quick[0] and "<dd>" in quick[0]


def test_a_project_extension_with_inline_patterns_gets_markdowns_own_code(fast, monkeypatch):
    md = _perfsite_markdown("pymdownx.betterem", "pymdownx.mark")
    page = PAGE + "\n==marked== and *em*phasis\n"
    quick = _convert(md, page)
    assert md.treeprocessors["inline"].perfsite_needs is None
    _released_markdown(monkeypatch)
    assert quick == _convert(_perfsite_markdown("pymdownx.betterem", "pymdownx.mark"), page)
    assert "<mark>marked</mark>" in quick[0]


def _sections(html: str) -> list[tuple[Any, ...]]:
    parser = search_plugin.Parser()
    parser.feed(html)
    parser.close()
    return [(s.el.tag, s.el.attrs, s.depth, s.id, s.title, s.text, s.is_excluded()) for s in parser.data]


def test_the_search_parser_finds_the_same_sections(fast, monkeypatch):
    assert fast_paths.known_search_plugin() and search_plugin.Parser is fast_paths._Parser
    html = _convert(_perfsite_markdown(), PAGE)[0] + HTML_EXTRA
    for page in (html, "<p>preface</p>" + html, "<h2 id='a'>first</h2>" + html, "text<h1>x</h1>"):
        quick = _sections(page)
        monkeypatch.setattr(search_plugin, "Parser", fast_paths._ReleasedParser)
        assert quick == _sections(page)
        monkeypatch.setattr(search_plugin, "Parser", fast_paths._Parser)


def test_the_search_plugin_leaves_the_same_page_and_index(fast):
    """Material's on_page_context replaced by fast_paths._on_page_context in the event's list (its method was
    registered before hooks load), with the same page content and index entries, data-search-* or not."""
    plugin = search_plugin.SearchPlugin()
    plugin.load_config({})
    plugins = PluginCollection()
    plugins["material/search"] = plugin
    config = SimpleNamespace(plugins=plugins)
    released = plugins.events["page_context"][0]
    fast_paths._faster_page_context(config)
    quick = plugins.events["page_context"][0]
    assert quick.__func__ is fast_paths._on_page_context and quick.__self__ is plugin
    html = _convert(_perfsite_markdown(), PAGE)[0] + HTML_EXTRA
    for content in (html, html.replace("<div data-search-exclude>", '<div data-search-exclude="x" class="a">'),
                    '<h1 id="t">T</h1><p data-search-boost="2">p</p>', ""):
        results = []
        for method in (released, quick):
            plugin.search_index = search_plugin.SearchIndex(**plugin.config)
            page = SimpleNamespace(content=content, toc=[], url="p.html", meta={}, title="T")
            method({}, page=page, config=None, nav=None)
            results.append((page.content, plugin.search_index.entries))
        assert results[0] == results[1]
