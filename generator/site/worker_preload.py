"""Imported, for its effect, by the server process of generator.site.incremental's pool of page workers
(`set_forkserver_preload`): what every worker would otherwise do on its first experiment is done once there,
before the server forks the workers, which inherit it.

- Every page template compiled into the process's one Jinja environment (page_base.template_env): about a
  quarter of a CPU-second a process.
- The modules the page code imports on first use: scipy.special (Student's t, generator.results.intervals, a
  fifth of a second), the ONNX op names (generator.layers.anchors, which imports onnx) and the integrity
  check of the results (generator.results.integrity). Their modules defer them so that commands which never
  make a page do not pay for them; a page worker always does.

Nothing here changes what a page says: a worker that did not inherit it compiles and imports the same on use.
"""

from __future__ import annotations

import scipy.special  # noqa: F401

import generator.layers.anchors  # noqa: F401
import generator.results.integrity  # noqa: F401
from generator.site.page_base import template_env


def compile_templates() -> None:
    """Every template of site_templates/ compiled into the environment the page kinds render with."""
    env = template_env()
    for name in env.list_templates(extensions=["j2"]):
        env.get_template(name)


try:
    compile_templates()
except Exception:  # noqa: BLE001 - a server that died here would read as "out of memory" (BROKEN_WORKER): a
    pass  # worker compiles the template again when a page needs it, and raises the real error there
