"""A generative experiment's profile pages: one per version with profiled trials, where its prefill and one
decode step spend their time node by node at every configuration (site_templates/generative_profile.md.j2),
the decode step's bytes held against the machine's measured memory bandwidth."""

from __future__ import annotations

from dataclasses import dataclass

import jinja2

from generator.analysis.generative_layers import VersionLayers, version_layers
from generator.site.page_base import REPORTS_DIR, ExperimentView, Page, render


@dataclass(frozen=True)
class ProfileLink:
    layers: VersionLayers
    path: str  # relative to the experiment's folder


def profile_links(view: ExperimentView) -> list[ProfileLink]:
    """Each version with a profiled phase and its page (the version's profile_path: a name from the version's
    alone, so that links stay valid as figures change)."""
    if view.generative is None:
        return []
    paths = {v.info.version: v.profile_path for v in view.versions}
    return [ProfileLink(layers, paths[layers.version])
            for layers in version_layers(view.generative, view.results.phase_nodes)
            if layers.version in paths]


def generative_profile_pages(env: jinja2.Environment, view: ExperimentView,
                             links: list[ProfileLink] | None = None) -> list[Page]:
    links = profile_links(view) if links is None else links
    return [render(env, "generative_profile.md.j2", f"{REPORTS_DIR}/{view.slug}/{link.path}",
                   f"{link.layers.version} — profile", True, e=view, g=view.generative, v=link.layers,
                   others=[o for o in links if o is not link])
            for link in links]
