"""An experiment measured on several machines: one report per machine, and a page that lists them.

Every comparison of a report (sweet spots, best versions, compare and chooser pages, findings) is of one machine
with itself (generator.analysis.per_machine): the experiment's folder then holds its machines page (the only page
that compares across machines, and says so), an index of the machines with what each report found, and one
folder per machine with a whole report of that machine's trials (`reports/<experiment>/<machine>/`).
"""

from __future__ import annotations

import json
from collections.abc import Callable

import jinja2

from generator.analysis.per_machine import per_environment
from generator.results.store import ExperimentResults
from generator.site import machines_page
from generator.site.page_base import REPORTS_DIR, ExperimentView, Page, experiment_view, render, slugify

# How the pages module makes a view of results (pages.site_view) and writes its findings.json
# (pages.findings_json): passed in, since that module renders the machines' pages with this one's.
ViewOf = Callable[..., ExperimentView]
FindingsOf = Callable[[ExperimentView], str]

# Names a machine's folder may not take: the experiment folder's own files and folders.
_TAKEN = {"index", "machines", "findings", "choose", "assets"}


def machine_views(results: ExperimentResults, slug: str,
                  view_of: ViewOf) -> tuple[ExperimentView, list[ExperimentView]] | None:
    """The whole experiment's view (for its machines page: no findings) and one view per machine (`view_of`), or
    None for an experiment measured on one machine."""
    parts = per_environment(results)
    if len(parts) < 2:
        return None
    taken = set(_TAKEN)
    views = [view_of(part.results, f"{slug}/{slugify(part.machine.label, taken)}",
                         machine=part.machine.label, machine_count=len(parts)) for part in parts]
    return experiment_view(results, slug, chooser=False, claims=False), views


def machine_pages(env: jinja2.Environment, whole: ExperimentView, views: list[ExperimentView],
                  findings_of: FindingsOf) -> list[Page]:
    """The experiment's own pages: the index of its machines (with findings.json of every machine), then the
    machines page. Each machine's pages are its view's (pages.view_pages)."""
    index = render(env, "experiment_machines.md.j2", f"{REPORTS_DIR}/{whole.slug}/index.md", whole.name, True,
                   e=whole, machines=[(v, v.slug.rsplit("/", 1)[1]) for v in views])
    files = ((f"{REPORTS_DIR}/{whole.slug}/findings.json", findings_json(whole, views, findings_of)),)
    index = Page(index.path, index.title, index.markdown, index.files + files)
    return [index, *machines_page.machines_pages(env, whole)]


def findings_json(whole: ExperimentView, views: list[ExperimentView], findings_of: FindingsOf) -> str:
    """The experiment's findings.json (docs/findings.md, "Several machines"): each machine's findings, their ids
    prefixed with the machine's environment (stable across runs on it) and their pages with its folder."""
    machines, findings, about = [], [], {}
    for view in views:
        folder = view.slug.rsplit("/", 1)[1]
        data = json.loads(findings_of(view)) if view.findings is not None else {"findings": []}
        env_id = data.get("env_id")
        about = about or {k: data[k] for k in ("findings_version", "false_discovery_rate") if k in data}
        machines.append({"machine": view.machine, "env_id": env_id, "findings": f"{folder}/findings.json",
                         "count": len(data["findings"]), "settled": sum(f["settled"] for f in data["findings"])})
        findings += [{**f, "id": f"{env_id}/{f['id']}", "page": f"{folder}/{f['page']}", "machine": view.machine}
                     for f in data["findings"]]
    data = {"findings_version": about.get("findings_version"), "experiment": whole.name,
            "false_discovery_rate": about.get("false_discovery_rate"), "count": len(findings),
            "settled": sum(f["settled"] for f in findings), "machines": machines, "findings": findings}
    return json.dumps(data, indent=1, ensure_ascii=False, sort_keys=False) + "\n"
