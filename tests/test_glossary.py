"""The report pages' jargon is explained where it appears (generator.site.glossary) and on the glossary page."""

from __future__ import annotations

import re

from support.cli import ROOT

from generator.site.glossary import GLOSSARY, abbreviations


def test_the_glossary_page_defines_every_term_as_the_pages_do():
    page = (ROOT / "docs" / "glossary.md").read_text()
    for term, text in GLOSSARY.items():
        if term == "Of roofline":  # the column heading of "of roofline", defined once
            continue
        assert f"**{term}**\n:   {text[0].upper() + text[1:]}." in page, term
    assert "glossary.md" in (ROOT / "mkdocs.yml").read_text()


def test_a_page_gets_a_hover_text_for_each_term_and_configuration_label_it_uses():
    text = abbreviations("| b8 t1 c2 | spinning on | 12 MOP | cv 0.03 | coverage | b8 t1 c2 |")
    lines = text.splitlines()
    assert "*[b8 t1 c2]: batch 8, 1 intra-op thread, 2 requests in flight at once" in lines
    assert any(line.startswith("*[spinning]: ") for line in lines)
    assert any(line.startswith("*[MOP]: ") for line in lines)
    assert any(line.startswith("*[cv]: ") for line in lines)
    assert len([line for line in lines if line.startswith("*[b8 t1 c2]")]) == 1  # once per page
    assert not any(line.startswith("*[p90]") for line in lines)  # only what the page uses
    assert abbreviations("nothing to explain here") == ""


def test_every_glossary_term_on_a_built_page_is_explained_on_that_page(tmp_path):
    """A real build: each term and label a report page shows is an <abbr> with its meaning, on that page."""
    from support.results import write_results

    from generator.site import build_site

    (tmp_path / "project").mkdir()
    site = build_site(write_results(tmp_path / "results"), tmp_path / "site", tmp_path / "project")
    html = (site / "reports" / "cnn-int8" / "profile-int8.html").read_text()
    assert re.search(r'<abbr title="batch \d+, \d+ intra-op threads?, \d+ requests? in flight at once">'
                     r"b\d+ t\d+ c\d+</abbr>", html)
    # Code spans and scripts are not prose (an abbreviation is never applied inside them).
    article = re.sub(r"<script.*?</script>|<code>.*?</code>", "", html.split("<article", 1)[1], flags=re.S)
    for term in ("spinning", "MOP", "KiB moved", "model_run"):
        if re.search(rf"(?<![\w-]){re.escape(term)}(?![\w-])", re.sub(r"<[^>]+>", " ", article)):
            assert f'">{term}</abbr>' in article, term
