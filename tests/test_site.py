"""`build_site`: pages, navigation, config inheritance, docs, determinism, user errors, and hostile text."""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from pathlib import Path

import markdown
import pytest
import yaml
from pymdownx import emoji as pymdownx_emoji
from support.cli import ROOT, perfsite
from support.compare import write_compare_results
from support.results import PAYLOAD, write_results
from support.site import folder_links, network_references

from generator.errors import SiteError
from generator.site import build_site
from generator.site.build import _read_config
from generator.site.escape import md_paragraphs, md_text
from generator.site.pages import templates_dir
from generator.site.serve import BackgroundServer, make_server


@pytest.fixture(scope="module")
def results_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("results")
    write_results(root)
    return root


@pytest.fixture(scope="module")
def built(tmp_path_factory, results_root) -> tuple[Path, Path]:
    project = tmp_path_factory.mktemp("project")
    site = build_site(results_root, project / "site", project)
    return project, site


def _with_pages_of(built: tuple[Path, Path], project: Path) -> Path:
    """`project` with the `built` project's page cache (hard links): its build of results_root reuses the
    experiment's pages, which depend on the results, their place and perfsite, never on the project
    (generator.site.incremental), and spends its time on what the test is about, the project's docs and
    mkdocs.yml. Generating the pages is proved by `built` and test_rebuild_gives_identical_markdown."""
    cache = Path(".perfsite") / "cache" / "pages"
    shutil.copytree(built[0] / cache, project / cache, copy_function=os.link)
    return project


def _config(project: Path) -> dict:
    return yaml.safe_load((project / ".perfsite" / "build" / "mkdocs.yml").read_text())


def test_builds_every_page_with_the_packaged_config(built):
    project, site = built
    for page in ("index.html", "reports/index.html", "reports/cnn-int8/index.html",
                 "reports/cnn-int8/profile-fp32.html", "reports/cnn-int8/profile-int8.html"):
        assert (site / page).is_file(), page
    for asset in ("vendor/vega.min.js", "vendor/vega-lite.min.js", "vendor/vega-embed.min.js",
                  "vendor/tablesort.min.js", "vendor/tablesort.number.min.js", "perfsite.js", "perfsite.css"):
        assert (site / "assets" / "perfsite" / asset).is_file(), asset
    config = _config(project)
    assert config["INHERIT"] == str(templates_dir() / "mkdocs.base.yml")
    html = (site / "reports" / "cnn-int8" / "index.html").read_text()
    assert 'src="../../assets/perfsite/perfsite.js"' in html
    # The 830 KB chart library is loaded by perfsite.js on pages with a chart, not by every page.
    assert "vendor/vega" not in html and "vendor/vega" not in (site / "index.html").read_text()
    for page in site.rglob("*.html"):
        assert not network_references(page.read_text()), page


def test_generated_nav_lists_reports_per_experiment(built):
    project, _ = built
    nav = _config(project)["nav"]
    assert nav[0] == {"Home": "index.md"}
    reports = nav[1]["Reports"]
    assert reports[0] == {"All reports": "reports/index.md"}
    assert reports[1] == {"cnn-int8": [{"Overview": "reports/cnn-int8/index.md"},
                                       {"fp32 — profile": "reports/cnn-int8/profile-fp32.md"},
                                       {"int8 — profile": "reports/cnn-int8/profile-int8.md"},
                                       {"Choose A and B": "reports/cnn-int8/choose.md"}]}


def test_pages_show_the_figures_and_warnings(built):
    project, _ = built
    docs = project / ".perfsite" / "build" / "docs" / "reports"
    overview = (docs / "cnn-int8" / "index.md").read_text()
    assert "trials noisy" not in overview and '!!! failure "1 failed trial"' in overview
    assert "| fp32 | b8 t2 c1 | 6.88 | 6.74 | 7.84 | — | 1,163 | 1.10 | unknown | ok |" in overview
    assert "findings on this page settled" in overview
    assert "| Latency p95 (ms) |" in overview and "| Throughput (items/s) |" in overview
    assert '<div class="perfsite-chart" data-chart="chart-latency-throughput"></div>' in overview
    index = (docs / "index.md").read_text()
    assert "AMD EPYC 7B13" in index and "AVX, AVX2, FMA" in index and "Sweet spot ≤ 12.0 ms" in index
    profile = (docs / "cnn-int8" / "profile-int8.md").read_text()
    assert "## b1 t2 c1" in profile and "### Unattributed time" in profile and "| Conv | 3 | 3 |" in profile


def test_every_version_stands_side_by_side_at_each_configuration(built):
    """The N-way table: every version at each configuration two or more ran, against the first version in the
    spec, with its size and its outputs against its reference; a bar and an interval each on its chart."""
    project, _ = built
    overview = (project / ".perfsite" / "build" / "docs" / "reports" / "cnn-int8" / "index.md").read_text()
    section = overview[overview.index("## Every version side by side"):overview.index("## Versions")]
    rows = [r for r in section.splitlines() if r.startswith("| ") and "---" not in r][1:]
    configs = {r.split(" | ")[0].strip("| ") for r in rows} - {""}
    assert rows and len(rows) == 2 * len(configs)  # fp32 and int8 at each configuration both ran
    first, second = rows[0].split(" | "), rows[1].split(" | ")
    assert first[1] == "**fp32** (reference)" and first[4] == "1.000" and first[8] == "—"
    assert second[1] == "int8" and second[8] == "—" and re.fullmatch(r"\d\.\d{3}", second[4])  # no outputs stored
    assert re.fullmatch(r"[\d.,]+–[\d.,]+", first[3]) or first[3] == "—"
    spec = json.loads(re.search(r'<script type="application/json" id="chart-versions">\[(.*)\]</script>',
                                overview, re.S).group(1))
    assert [layer["name"] for layer in spec["layer"]] == ["bars", "intervals"]
    assert len(spec["data"]["values"]) == len(rows)


def test_rebuild_gives_identical_markdown(tmp_path, results_root, built):
    project, _ = built
    first = {p.relative_to(project): p.read_bytes() for p in (project / ".perfsite/build/docs").rglob("*.md")}
    again = tmp_path / "again"
    again.mkdir()
    build_site(results_root, again / "site", again)
    second = {p.relative_to(again): p.read_bytes() for p in (again / ".perfsite/build/docs").rglob("*.md")}
    assert first == second


def test_a_project_nav_orders_its_docs_and_reports_follow_its_home(tmp_path, results_root, built):
    project = _with_pages_of(built, tmp_path / "proj")
    (project / "docs").mkdir(parents=True)
    for name in ("index.md", "spec.md", "architecture.md"):
        (project / "docs" / name).write_text(f"# {name}\n")
    (project / "mkdocs.yml").write_text(
        "site_name: Ours\ntheme: {name: material, font: false}\n"
        "nav:\n  - Home: index.md\n  - Guide:\n    - Spec: spec.md\n    - Architecture: architecture.md\n")
    site = build_site(results_root, project / "site", project)
    nav = _config(project)["nav"]
    assert nav[0] == {"Home": "index.md"} and list(nav[1]) == ["Reports"]
    assert nav[2] == {"Guide": [{"Spec": "spec.md"}, {"Architecture": "architecture.md"}]}
    assert nav[1]["Reports"][0] == {"All reports": "reports/index.md"}
    # This mkdocs.yml leaves use_directory_urls out: links to .html files all the same (mkdocs' default is folders).
    assert (site / "architecture.html").is_file() and not (site / "architecture").exists()
    assert (site / "reports" / "cnn-int8" / "index.html").is_file()


def test_project_docs_and_config_are_used(tmp_path, results_root, built):
    project = _with_pages_of(built, tmp_path / "proj")
    (project / "docs").mkdir(parents=True)
    (project / "docs" / "index.md").write_text("# Our models\n\nSee the [reports](reports/index.md).\n")
    (project / "docs" / "getting-started.md").write_text("# Getting started\n")
    (project / "docs" / "methodology.md").write_text("# Methodology\n")
    (project / "mkdocs.yml").write_text("site_name: Our models\ntheme: {name: material, font: false}\n"
                                        "extra_javascript: [extra.js]\n")
    (project / "docs" / "extra.js").write_text("// ours\n")
    site = build_site(results_root, project / "site", project)
    config = _config(project)
    assert config["INHERIT"] == str(project / "mkdocs.yml")
    assert config["nav"][:2] == [{"Home": "index.md"}, {"Getting started": "getting-started.md"}]
    assert config["nav"][3] == {"Documentation": ["methodology.md"]}
    # The project's script is kept; perfsite's scripts and extensions are added after it.
    assert config["extra_javascript"][0] == "extra.js"
    assert config["extra_javascript"][-3:] == ["assets/perfsite/perfsite.js", "assets/perfsite/perfsite-choose.js",
                                               "assets/perfsite/perfsite-choose-generative.js"]
    assert config["markdown_extensions"] == ["admonition", "tables", "toc", "md_in_html", "abbr",
                                             "pymdownx.superfences", {"pymdownx.tabbed": {"alternate_style": True}}]
    assert "Our models" in (site / "index.html").read_text()
    assert "<title>Our models</title>" in (site / "index.html").read_text()


def test_quick_mode_and_all_failed_trials_are_reported(tmp_path):
    from generator.results.store import load_experiment
    from generator.site.pages import render_pages

    # The quick-mode notes are in the pages' Markdown, rendered here as a build renders them into its docs folder
    # (render_pages, generator.site.incremental): a second site build (mkdocs, about 3 s) showed nothing more.
    pages, _ = render_pages([load_experiment(write_results(tmp_path / "quick", quick=True))])
    quick = {page.path: page.markdown for page in pages}
    assert '!!! warning "Quick mode"' in quick["reports/index.md"]
    assert '!!! warning "Quick mode"' in quick["reports/cnn-int8/index.md"]
    assert "ok (quick)" in quick["reports/cnn-int8/index.md"]
    # Every page that gives verdicts or figures says it, the chooser too (it did not), and `perfsite compare`.
    for page in ("choose.md", "profile-fp32.md"):
        assert '!!! warning "Quick mode"' in quick[f"reports/cnn-int8/{page}"], page
    from generator.cli.compare import compare_command

    said = compare_command(tmp_path / "quick", "fp32", "int8")
    assert "note: measured in quick mode (a preview: warm-up and measurement shrunk), so the figures are rough: " \
           "fp32 at b1 t2 c1, int8 at b1 t2 c1; measure without --quick" in said
    write_results(tmp_path / "failed", only_failed=True)
    site = build_site(tmp_path / "failed", tmp_path / "site-failed", tmp_path)
    docs = tmp_path / ".perfsite" / "build" / "docs" / "reports"
    overview = (docs / "cnn-int8" / "index.md").read_text()
    assert '!!! failure "No successful trial"' in overview and "perfsite-chart" not in overview
    assert '!!! failure "This trial failed"' in (docs / "cnn-int8" / "profile-fp32.md").read_text()
    assert (site / "reports" / "cnn-int8" / "profile-int8.html").is_file()


def test_a_version_whose_every_trial_failed_says_so_in_the_best_results(tmp_path):
    """int8 with 0 ok and 4 failed trials was shown as "— … none under the threshold" in the experiment page's
    Best results and the reports index, as if it had run and been too slow."""
    from generator.results.store import load_experiment
    from generator.site.pages import experiment_pages, experiment_view, reports_index, template_env

    view = experiment_view(load_experiment(write_results(tmp_path, failed_versions=("int8",))), "cnn-int8")
    env = template_env()
    overview, index = experiment_pages(env, view)[0].markdown, reports_index(env, [view]).markdown
    row = "| int8 | — | — | — | — | — | — | no successful trial (4 failed) | — | [profile](profile-int8.md) |"
    assert row in overview
    assert "| int8 | — | — | — | — | — | no successful trial (4 failed) |" in index
    assert "none under the threshold" not in overview + index


def test_a_project_config_lacking_nothing_is_not_rewritten(tmp_path, results_root, built):
    _with_pages_of(built, tmp_path)
    build_site(results_root, tmp_path / "site", tmp_path)
    config = _config(tmp_path)
    assert "extra_javascript" not in config and "markdown_extensions" not in config


def test_a_failed_build_quotes_mkdocs_warnings_only_and_no_notice_about_generated_pages(tmp_path):
    """A compare page links the chooser with its choice in the fragment (`choose.md#a=fp32&…`), which mkdocs'
    anchor check took for a missing anchor: an INFO line per compare page quoted in the error of a build failed
    by the project's own broken link, and a failed build for a project asking for `validation: {anchors: warn}`.
    Those links are not checked (generator.site.choice_links), the project's own anchors still are, and the
    error quotes mkdocs' warnings without its INFO lines (the staging folder it cleaned, ...)."""
    write_compare_results(tmp_path / "results")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[missing](nowhere.md) and [there](#no-such-heading)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nvalidation: {anchors: warn}\n")
    with pytest.raises(SiteError) as raised:
        build_site(tmp_path / "results", tmp_path / "site", tmp_path)
    message = str(raised.value)
    quoted = message.split("mkdocs said:\n", 1)[1].splitlines()
    assert quoted[-1] == "Aborted with 2 warnings in strict mode!", message
    assert [line.split(" -  ")[0].strip() for line in quoted[:-1]] == ["WARNING", "WARNING"], message
    assert "'nowhere.md'" in message and "'#no-such-heading'" in message
    assert "INFO" not in message and "choose.md" not in message and ".site.perfsite-new" not in message
    assert (tmp_path / ".perfsite" / "build" / "docs" / "reports" / "tiny-compare" / "compare-fp32-vs-best.md"
            ).read_text().count("(choose.md#a=fp32&") == 1  # the page does link its pair in the chooser


def test_a_broken_link_converted_by_a_child_process_still_fails_the_build(tmp_path, results_root, built):
    """Pages are converted by forked children too (generator.site.render_cache.on_nav, shares by size): a large
    first page puts the later ones in a child's share; the page that warned there is converted again by
    mkdocs itself, so the strict build fails with mkdocs' words, and fails again the next time."""
    _with_pages_of(built, tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a-long.md").write_text("# Long\n\n" + "A paragraph of text.\n\n" * 5_000)
    (tmp_path / "docs" / "b-guide.md").write_text("# Guide\n\n[missing](nowhere.md)\n")
    for _ in range(2):
        with pytest.raises(SiteError, match=r"(?s)mkdocs build --strict failed.*nowhere\.md"):
            build_site(results_root, tmp_path / "site", tmp_path)
    # Shares follow the pages' order (index.md, a-long.md, b-guide.md, reports/…): with a-long.md larger than
    # every other page together, b-guide.md starts the second share, a child's on any machine of 2 CPUs or more.
    docs = tmp_path / ".perfsite" / "build" / "docs"
    pages = {p.relative_to(docs).as_posix(): p.stat().st_size for p in docs.rglob("*.md")}
    assert pages.pop("a-long.md") > sum(pages.values()), pages


def test_a_docs_reports_folder_is_refused(tmp_path, results_root):
    (tmp_path / "docs" / "reports").mkdir(parents=True)
    with pytest.raises(SiteError, match="where perfsite writes the generated reports"):
        build_site(results_root, tmp_path / "site", tmp_path)


@pytest.mark.parametrize("where", ["project", "docs", "nonsite"])
def test_site_folder_that_would_wipe_other_files_is_refused(tmp_path, results_root, where):
    (tmp_path / "docs").mkdir()
    (tmp_path / "nonsite").mkdir()
    (tmp_path / "nonsite" / "notes.txt").write_text("precious")
    site = {"project": tmp_path, "docs": tmp_path / "docs", "nonsite": tmp_path / "nonsite"}[where]
    with pytest.raises(SiteError, match="site folder"):
        build_site(results_root, site, tmp_path)
    assert (tmp_path / "nonsite" / "notes.txt").read_text() == "precious"


def test_missing_results_root_is_a_user_error(tmp_path):
    with pytest.raises(Exception) as info:
        build_site(tmp_path / "nope", tmp_path / "site", tmp_path)
    assert "does not exist" in str(info.value) and info.type.__name__ == "ResultsError"


# Project mkdocs.yml files that leave perfsite's settings out: `theme: {name: material}` loaded Google Fonts and
# linked folders, a file without `theme:` got mkdocs' own theme (highlight.js from cdnjs) and `theme: material`
# replaced the packaged theme whole.
LACKING = {
    "material-without-font": "site_name: X\ntheme:\n  name: material\n",
    "no-theme": "site_name: X\n",
    "theme-as-a-word": "site_name: X\ntheme: material\nextra_css: [ours.css]\n",
}


@pytest.mark.parametrize("config", LACKING.values(), ids=LACKING)
def test_a_project_config_lacking_the_offline_settings_still_builds_an_offline_site(tmp_path, results_root, config,
                                                                                    built):
    _with_pages_of(built, tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n\n[Reports](reports/index.md)\n")
    (tmp_path / "docs" / "ours.css").write_text("body {}\n")
    (tmp_path / "mkdocs.yml").write_text(config)
    site = build_site(results_root, tmp_path / "site", tmp_path)
    pages = sorted(site.rglob("*.html"))
    assert len(pages) >= 8 and (site / "guide.html").is_file()
    assert (site / "reports" / "cnn-int8" / "index.html").is_file()
    for page in pages:
        html = page.read_text()
        assert not network_references(html), (page, network_references(html))
        assert not folder_links(html), (page, folder_links(html))
    index = (site / "index.html").read_text()
    assert 'href="reports/index.html"' in index and "assets/javascripts/bundle." in index  # Material's script
    assert (site / "search" / "search_index.js").is_file()  # the offline plugin: search from disk too
    theme = _config(tmp_path)["theme"]
    assert theme["name"] == "material" and theme["font"] is False and "toc.integrate" in theme["features"]
    if "theme:" not in config:  # the packaged theme whole: its palette (dark mode) and features
        assert "palette" in theme and "navigation.prune" in theme["features"]


def test_a_project_asking_for_directory_urls_gets_a_site_to_serve_over_http(tmp_path, results_root, built):
    """`use_directory_urls: true` is a project's choice for a site it serves over HTTP (GitHub Pages' pretty
    URLs): kept, as it was before the offline settings were checked, without the offline plugin (which would
    turn it off), and still loading nothing from another host."""
    _with_pages_of(built, tmp_path)
    (tmp_path / "mkdocs.yml").write_text("site_name: X\nuse_directory_urls: true\ntheme: {name: material}\n")
    site = build_site(results_root, tmp_path / "site", tmp_path)
    index = (site / "index.html").read_text()
    assert 'href="reports/"' in index and (site / "reports" / "cnn-int8" / "index.html").is_file()
    assert not (site / "search" / "search_index.js").exists() and "offline" not in _config(tmp_path)["plugins"]
    assert all(not network_references(p.read_text()) for p in site.rglob("*.html"))


# Settings that break the promise, and the words of the error that names them.
REFUSED = {
    "other-theme": ("theme: {name: readthedocs}", "`theme.name: readthedocs` cannot be used for perfsite's site",
                    "Allowed for theme.name: `material` (mkdocs-material), or leave it out"),
    "other-theme-as-a-word": ("theme: mkdocs", "`theme.name: mkdocs` cannot be used",
                              "mkdocs' own theme loads highlight.js from a CDN"),
    "web-font": ("theme: {name: material, font: {text: Roboto}}", "`theme.font: {text: Roboto}` cannot be used",
                 "Google Fonts", "Allowed for theme.font: `false` (the reader's system fonts), or leave it out"),
    "repository-button": ("repo_url: https://github.com/o/r", "`repo_url: https://github.com/o/r` cannot be used",
                          "stars and forks from its host's API"),
    "analytics": ("extra: {analytics: {provider: google, property: G-X}}", "`extra.analytics: {property: G-X, "
                  "provider: google}` cannot be used"),
    "cdn-script": ("extra_javascript: [ours.js, {path: 'https://cdn.example.org/lib/mathjax.js', async: true}]",
                   "`extra_javascript` names https://cdn.example.org/lib/mathjax.js, which the built site would "
                   "download on every page view", "e.g. assets/mathjax.js"),
    "cdn-style": ("extra_css: ['//cdn.example.org/a.css']", "`extra_css` names //cdn.example.org/a.css"),
    "remote-logo": ("theme: {name: material, logo: 'https://example.org/logo.png'}",
                    "`theme.logo` names https://example.org/logo.png"),
    "cdn-emoji": ("markdown_extensions:\n  - pymdownx.emoji:\n      emoji_index: "
                  "!!python/name:material.extensions.emoji.twemoji\n      emoji_generator: "
                  "!!python/name:material.extensions.emoji.to_svg",
                  "`markdown_extensions: pymdownx.emoji` as configured makes every Unicode emoji a page uses",
                  "`emoji_generator: !!python/name:pymdownx.emoji.to_alt` (the emoji as text)"),
    "cdn-mermaid": ("markdown_extensions:\n  - pymdownx.superfences:\n      custom_fences:\n        - name: mermaid\n"
                    "          class: mermaid\n          format: !!python/name:pymdownx.superfences.fence_code_format",
                    "has a mermaid fence, and Material loads mermaid.min.js from a CDN",
                    "list it in `extra_javascript`, e.g. assets/mermaid.min.js"),
}


@pytest.mark.parametrize("allowed", [
    {"markdown_extensions": [{"pymdownx.emoji": {"emoji_generator": pymdownx_emoji.to_alt}}]},
    {"markdown_extensions": [{"pymdownx.emoji": {"emoji_generator": pymdownx_emoji.to_svg_sprite}}]},
    {"markdown_extensions": [{"pymdownx.emoji": {"options": {"image_path": "assets/emoji/"}}}]},
    {"markdown_extensions": [{"pymdownx.emoji": {"emoji_index": pymdownx_emoji.gemoji, "options": {
        "image_path": "assets/emoji/", "non_standard_image_path": "assets/emoji/"}}}]},
    {"markdown_extensions": [{"pymdownx.superfences": {"custom_fences": [{"name": "mermaid", "class": "mermaid"}]}}],
     "extra_javascript": ["assets/mermaid.min.js"]},
    {"markdown_extensions": ["pymdownx.superfences", "pymdownx.highlight"]},
], ids=["emoji-as-text", "emoji-sprites", "emoji-images-of-the-site", "gemoji-images-of-the-site",
        "mermaid-of-the-site", "no-cdn-extension"])
def test_extensions_that_load_nothing_from_a_cdn_are_accepted(tmp_path, allowed):
    from generator.site.offline_settings import check_project_config

    check_project_config(tmp_path / "mkdocs.yml", {"site_name": "X", **allowed})


@pytest.mark.parametrize("refused", [
    {"markdown_extensions": [{"pymdownx.emoji": {"emoji_index": pymdownx_emoji.gemoji,
                                                 "options": {"image_path": "assets/emoji/"}}}]},
    {"markdown_extensions": [{"pymdownx.emoji": {"options": {"image_path": "https://cdn.example.org/e/"}}}]},
    {"markdown_extensions": [{"pymdownx.superfences": {"custom_fences": [{"name": "mermaid", "class": "mermaid"}]}}],
     "extra_javascript": ["assets/mermaid-init.js"]},
], ids=["gemoji-github-images", "emoji-images-of-a-cdn", "mermaid-init-script-only"])
def test_extensions_that_still_load_from_a_cdn_are_refused(tmp_path, refused):
    """gemoji's non-standard emoji come from GitHub unless their path is given too; a script named after mermaid
    that is not its bundle defines no global `mermaid`, so Material still loads a CDN's copy."""
    from generator.site.offline_settings import check_project_config

    with pytest.raises(SiteError, match="CDN"):
        check_project_config(tmp_path / "mkdocs.yml", {"site_name": "X", **refused})


@pytest.mark.parametrize("refused", REFUSED.values(), ids=REFUSED)
def test_a_project_config_that_would_take_the_site_online_is_refused_naming_the_setting(tmp_path, results_root,
                                                                                        refused):
    setting, *words = refused
    (tmp_path / "mkdocs.yml").write_text(f"site_name: X\n{setting}\n")
    with pytest.raises(SiteError) as raised:
        build_site(results_root, tmp_path / "site", tmp_path)
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'mkdocs.yml'}: `"), message
    assert all(w in message for w in words), message
    assert "opens from disk (file://); change or remove that setting" in message and "\n" not in message
    assert not (tmp_path / "site").exists()


def test_a_refused_setting_from_an_inherited_file_names_that_file(tmp_path, results_root):
    """A project mkdocs.yml that INHERITs a shared one: the error named the project's file, where the setting
    is not, and the user searched it in vain. It names the file of the chain the value comes from, and the one
    that inherits it; a setting the child file gives itself is the child's."""
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "base.yml").write_text(
        "site_name: X\ntheme:\n  name: material\n  font:\n    text: Roboto\nextra:\n  analytics:\n"
        "    provider: google\nmarkdown_extensions:\n  - pymdownx.emoji:\n"
        "      emoji_index: !!python/name:material.extensions.emoji.twemoji\n")
    (tmp_path / "mkdocs.yml").write_text("INHERIT: conf/base.yml\nsite_name: Y\n")
    with pytest.raises(SiteError) as raised:
        build_site(results_root, tmp_path / "site", tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'conf' / 'base.yml'} (inherited by {tmp_path / 'mkdocs.yml'}): "
                                        "`theme.font: {text: Roboto}` cannot be used"), raised.value
    (tmp_path / "mkdocs.yml").write_text("INHERIT: conf/base.yml\ntheme:\n  font: false\n  name: material\n")
    with pytest.raises(SiteError) as raised:  # the font is the child's now; the analytics still the parent's
        build_site(results_root, tmp_path / "site", tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'conf' / 'base.yml'} (inherited by {tmp_path / 'mkdocs.yml'}): "
                                        "`extra.analytics: "), raised.value
    (tmp_path / "mkdocs.yml").write_text("INHERIT: conf/base.yml\ntheme:\n  name: material\n  font: {text: Lato}\n")
    with pytest.raises(SiteError) as raised:
        build_site(results_root, tmp_path / "site", tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / 'mkdocs.yml'}: `theme.font: {{text: Lato}}` "), raised.value
    assert not (tmp_path / "site").exists()


def test_the_command_line_refuses_a_web_font_with_one_paragraph(tmp_path, results_root):
    (tmp_path / "mkdocs.yml").write_text("site_name: X\ntheme:\n  name: material\n  font:\n    text: Roboto\n")
    out = perfsite("build", "--results", str(results_root), "--site", "site", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert " ".join(out.stderr.split()).startswith(f"error: {tmp_path / 'mkdocs.yml'}: `theme.font: {{text: "
                                                   "Roboto}` cannot be used for perfsite's site: Material would "
                                                   "load its fonts from Google Fonts"), out.stderr


def test_packaged_config_is_offline_and_readable():
    config = _read_config(templates_dir() / "mkdocs.base.yml")
    assert config["theme"]["font"] is False
    assert "plugins" not in config or "privacy" not in str(config["plugins"])
    repo_config = _read_config(Path(__file__).resolve().parent.parent / "mkdocs.yml")
    assert repo_config["site_name"] == "perfsite" and repo_config["theme"]["font"] is False
    assert "navigation.instant" not in repo_config["theme"].get("features", [])


# --- hostile text ---------------------------------------------------------------------------------

def _render(text: str) -> str:
    return markdown.markdown(text, extensions=["tables", "admonition", "attr_list", "toc"])


def test_md_text_is_inert_in_a_table_cell():
    html = _render(f"| a | b |\n|---|---|\n| {md_text(PAYLOAD)} | x |\n")
    assert html.count("<td>") == 2  # the payload's | did not split the cell
    assert "<script" not in html and "<img" not in html and "<a " not in html and "<em>" not in html
    assert "{{ 7*7 }}" not in md_text(PAYLOAD)  # no template syntax survives literally either
    assert md_text("a\nb\r\nc") == "a b c"


def test_md_paragraphs_cannot_start_lists_or_headings():
    html = _render("\n\n".join(md_paragraphs("# title\n\n- item\n\n1. first\n\n---\n\n> quote")))
    assert not re.search(r"<(h1|ul|ol|li|hr|blockquote)", html)


def test_built_pages_from_hostile_results_carry_no_live_markup(tmp_path):
    write_results(tmp_path / "results", payload=True)
    site = build_site(tmp_path / "results", tmp_path / "site", tmp_path)
    pages = list(site.rglob("*.html"))
    assert any("profile-script-alert" in p.name for p in pages)
    for page in pages:
        html = page.read_text()
        # Chart data is JSON inside <script type="application/json">: inert as long as nothing in it can end
        # the element; everything else must hold the payload only as escaped text.
        for data in re.findall(r'<script type="application/json" id="chart-[^"]*">(.*?)</script>', html):
            assert "<" not in data and ">" not in data
        html = re.sub(r'(<script type="application/json" id="chart-[^"]*">).*?(</script>)', r"\1\2", html)
        assert "<script>alert" not in html and "<img src=x" not in html and "javascript:alert" not in html
        for match in re.finditer("onerror=", html):
            before = html[max(0, match.start() - 20):match.start()]
            assert re.search(r"(&lt;|&#60;)img src=x $", before), (page, before)
        title = re.search(r"<title>(.*?)</title>", html, re.S).group(1)
        assert "<" not in title, (page, title)


def test_serve_refuses_a_folder_that_is_not_a_site(tmp_path):
    with pytest.raises(SiteError, match="not a built site"):
        make_server(tmp_path)


def test_background_server_serves_the_site_on_loopback(built):
    _, site = built
    with BackgroundServer(site) as url:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "reports/index.html") as response:
            assert response.status == 200 and b"cnn-int8" in response.read()


# Expressions printed without a filter: numbers, slugs, constants and text escaped before it reaches the
# template. Anything else must go through `md` (untrusted text) or a formatting filter.
UNFILTERED_OK = re.compile(
    r"title|chart|s\.chart|paragraph|paragraphs\[0\].*|e\.slug|v\.profile_path|v\.info\.(model_files|trials_ok"
    r"|trials_failed)|axis_names\[line_axis\]|loop\.index|name|o\.(calls|nodes)|s\.node_count|s\.spread\.processes"
    r"|t\.batch|profiled_times_rule|\"\w+\" if .*"
    r"|m\.overall|m\.chart|sentence|figure\(.*\)"  # machines page: pre-escaped sentences, a macro
    r"|names\(.*\)"  # a generative profile page's macro (escapes the names it prints)
    r"|tv\.compute_title"  # a constant of generator.timeline.view (GFLOP/s or INT8 GOP/s)
    r"|charts\.\w+|versions_chart"  # chart blocks of generative and experiment pages (chart_block: escaped JSON)
    r"|F\.\w+\(.*\)|\(bound\.answer ~ F\.mark\(bound\)\) if bound else \"—\""  # site_templates/_findings.j2 escapes
    r"|settled|findings \| length|loop\.index0?|side"
    r"|e\.up|e\.parent_slug|folder"  # relative paths and slugs (a machine's report: generator.site.machine_reports)
    r"|data"  # the generative chooser's figures: escape.inline_json, safe inside a script element
)
SAFE_FILTERS = ("md", "num", "pct", "of_limit", "fixed", "mib", "short_sha", "when", "at", "length", "md_paragraphs",
                "url", "op_name", "answer", "band", "interval", "times_band", "plain", "first_upper")


def test_templates_print_untrusted_values_only_through_filters():
    for template in templates_dir().glob("*.md.j2"):
        for expression in re.findall(r"{{\s*(.*?)\s*}}", template.read_text()):
            last_filter = re.search(r"\|\s*(\w+)(\([^)]*\))?\s*([-+]\s*\d+)?\s*(if .*)?$", expression)
            if last_filter and last_filter.group(1) in SAFE_FILTERS:
                continue
            assert UNFILTERED_OK.fullmatch(expression), f"{template.name}: `{expression}` needs a filter"


def test_only_trials_too_uncertain_to_settle_anything_are_flagged_and_say_why(tmp_path):
    """Issue 34: 32 of 36 demo trials carried a "noisy" flag that told none apart, and a trial with a ± 141 %
    interval read as an ordinary row. The page flags only the trials whose interval is the widest of every
    unsettled finding they take part in, says why in their row, and draws them as triangles."""
    import dataclasses

    from support.results import write_results

    from generator.results.store import load_experiment
    from generator.site.pages import experiment_pages, experiment_view, template_env

    view = experiment_view(load_experiment(write_results(tmp_path)), "e")
    assert not view.uncertain  # the fixture's trials settle their findings
    wide = next(t for t in view.trials if t.ok)
    flagged = dataclasses.replace(wide, uncertain="its interval (± 141%) is the widest of every comparison it "
                                                  "takes part in, and none of those 3 findings is settled")
    trials = [flagged if t.trial_key == wide.trial_key else t for t in view.trials]
    page = experiment_pages(template_env(), dataclasses.replace(view, trials=trials))[0].markdown
    assert '!!! warning "1 trial too uncertain to settle anything"' in page
    assert f"{wide.version} at {wide.config_label}" in page.split("too uncertain to settle anything")[1]
    row = next(line for line in page.splitlines() if line.startswith(f"| {wide.version} | {wide.config_label} |"))
    assert row.endswith('| ok, **uncertain** <span class="perfsite-unsettled" title="its interval &#40;± 141%&#41; is '
                        'the widest of every comparison it takes part in, and none of those 3 findings is settled">'
                        'why</span> |')
    assert "Triangles mark trials too uncertain to settle any finding." in page


def test_an_oversubscribed_configuration_is_not_called_noisy_for_its_own_queueing():
    """threads × concurrency beyond the cores: the requests wait for each other on the quietest machine, so a
    high cv is the configuration's (advice to re-run elsewhere would be wrong); a spread still makes it noisy."""
    import dataclasses

    import pandas as pd
    from support.results import trial_row

    from generator.analysis.summaries import trial_summary
    from generator.runner.aggregate import noise_reasons
    from generator.site.pages import ExperimentView

    assert noise_reasons(1.14, 0.02, 2.0, 2.0) == ["cv 114% ≥ 10%"]
    assert noise_reasons(1.14, 0.02, 2.0, 2.0, oversubscribed=True) == []
    assert noise_reasons(1.14, 0.29, 2.0, 2.0, oversubscribed=True) == ["process medians spread 29% > 5%"]
    # Shown with the digits that make the comparison true: it read "process medians spread 5% > 5%".
    assert noise_reasons(0.01, 0.052, 2.0, 2.0) == ["process medians spread 5.2% > 5%"]
    assert noise_reasons(0.01, 0.0501, 2.0, 2.0) == ["process medians spread 5.01% > 5%"]
    row = pd.Series(trial_row("k1", "fp32", 1, 1, failed=False, noisy=False, n=1))
    fits = trial_summary(row)
    over = dataclasses.replace(fits, trial_key="k2", threads=2, concurrency=2, cores_expected=2.0, cv=1.14)
    assert not fits.oversubscribed and over.oversubscribed
    view = ExperimentView(name="e", slug="e", spec=None, percentile="p90", trials=[fits, over], versions=[],
                          environments=[], last_run=None, results=None)
    assert [t.trial_key for t in view.oversubscribed] == ["k2"]


def test_the_experiment_page_explains_oversubscribed_trials(tmp_path):
    import dataclasses

    from support.results import write_results

    from generator.results.store import load_experiment
    from generator.site.pages import experiment_pages, experiment_view, template_env

    view = experiment_view(load_experiment(write_results(tmp_path)), "e")
    trials = [dataclasses.replace(t, concurrency=2, cv=0.87, config_label="b1 t2 c2")
              if (t.version, t.batch, t.threads) == ("fp32", 1, 2) else t for t in view.trials]
    page = experiment_pages(template_env(), dataclasses.replace(view, trials=trials))[0].markdown
    assert '!!! note "1 trial asks for more threads than this machine has cores"' in page
    assert "exceeds the logical cores in b1 t2 c2:" in page
    assert "| ok (cv 87.0%, oversubscribed) |" in page


def test_the_results_reference_is_generated_from_the_schema():
    """docs/results.md is what generator.results.reference writes today: a column added to the schema without
    regenerating the page fails here (python -m generator.results.reference > docs/results.md)."""
    from generator.results.reference import results_reference
    from generator.results.schema import TABLES

    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    assert page == results_reference()
    assert all(f"| `{c.name}` |" in page for columns in TABLES.values() for c in columns)


def test_architecture_names_modules_that_exist_and_every_package():
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = re.findall(r"^\| `(generator(?:\.\w+)*)` \|", text, re.M)
    assert len(named) > 30
    for module in named:
        path = ROOT / module.replace(".", "/")
        assert path.with_suffix(".py").is_file() or (path / "__init__.py").is_file(), f"{module} does not exist"
    packages = sorted(p.parent.name for p in (ROOT / "generator").glob("*/__init__.py"))
    unlisted = [p for p in packages if not any(m == f"generator.{p}" or m.startswith(f"generator.{p}.")
                                               for m in named)]
    assert not unlisted, f"packages missing from docs/architecture.md: {unlisted}"


def test_control_and_bidi_characters_from_models_show_escaped_in_pages():
    """ESC and BEL in a node name, U+202E in a description reached the built HTML as raw bytes (inert, but
    invisible in copied text and able to reorder a line): pages show them as the terminal does."""
    assert md_text("conv\x1b[2J\x07") == "conv&#92;x1b&#91;2J&#92;x07"
    assert md_paragraphs("a\u202eb\x00") == ["a&#92;u202eb&#92;x00"]


def test_a_rebuild_shows_changed_front_matter_hooks_and_snippets_and_reads_custom_dir_from_the_project(tmp_path):
    """The render cache keeps a page's HTML and output; what else a page is made of must reach a rebuild: its
    front matter, the project's hooks (their source is part of the key), and files a Markdown extension reads
    (with pymdownx.snippets configured nothing is cached). Relative paths are the project's: the theme's
    custom_dir and snippets' base_path (mkdocs works in the project's folder)."""
    (tmp_path / "results").mkdir()
    for folder in ("docs", "overrides", "includes"):
        (tmp_path / folder).mkdir()
    (tmp_path / "overrides" / "main.html").write_text(
        '{% extends "base.html" %}{% block footer %}<p id="override">OVERRIDE</p>{% endblock %}')
    (tmp_path / "hooks.py").write_text("def on_page_content(html, **kwargs):\n    return html + '<p>HOOK-1</p>'\n")
    notes = tmp_path / "docs" / "notes.md"
    notes.write_text("---\ndescription: DESCRIPTION-1\n---\n# Notes\n\nText.\n")
    config = ("site_name: t\nuse_directory_urls: false\ntheme: {name: material, font: false, custom_dir: overrides}\n"
              "hooks: [hooks.py]\n")
    (tmp_path / "mkdocs.yml").write_text(config)

    def built() -> str:
        build_site(tmp_path / "results", tmp_path / "site", tmp_path)
        return (tmp_path / "site" / "notes.html").read_text()

    first = built()
    assert "DESCRIPTION-1" in first and "HOOK-1" in first and 'id="override"' in first
    assert any((tmp_path / ".perfsite" / "cache" / "render" / "entries").iterdir())  # the cache is in use
    notes.write_text(notes.read_text().replace("DESCRIPTION-1", "DESCRIPTION-2"))
    # Another length: Python's bytecode cache trusts a source of the same size and modification second, so a
    # same-size rewrite within a second of the first build would run the old hook (in plain mkdocs too).
    (tmp_path / "hooks.py").write_text((tmp_path / "hooks.py").read_text().replace("HOOK-1", "HOOK-TWO"))
    second = built()
    assert "DESCRIPTION-2" in second and "HOOK-TWO" in second and "HOOK-1" not in second

    snippets = "markdown_extensions:\n  - pymdownx.snippets: {base_path: [includes]}\n"
    (tmp_path / "mkdocs.yml").write_text(config + snippets)
    notes.write_text(notes.read_text() + '\n--8<-- "part.md"\n')
    (tmp_path / "includes" / "part.md").write_text("SNIPPET-1\n")
    assert "SNIPPET-1" in built()
    (tmp_path / "includes" / "part.md").write_text("SNIPPET-2\n")
    assert "SNIPPET-2" in built()


def test_a_plugin_that_is_not_installed_is_named_with_the_projects_mkdocs_yml(tmp_path):
    (tmp_path / "results").mkdir()
    (tmp_path / "docs").mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: t\nplugins:\n  - search\n  - nosuchplugin\n")
    with pytest.raises(SiteError) as raised:
        build_site(tmp_path / "results", tmp_path / "site", tmp_path)
    message = str(raised.value)
    assert message.startswith("mkdocs refused the site's configuration: Config value 'plugins': The "
                              '"nosuchplugin" plugin is not installed.'), message
    assert f"inherits {tmp_path / 'mkdocs.yml'}: fix the setting there" in message and "\n" not in message
    assert "Broken links" not in message
