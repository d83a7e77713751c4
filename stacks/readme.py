"""The README's settings tables, generated from the platforms' declarations (:mod:`.settings`).

``python -m gpuready_stacks.readme`` (in a checkout) rewrites each table between ``<!-- settings: PLATFORM -->`` and
``<!-- /settings -->``; a test checks that the README holds what this generates.
"""

from __future__ import annotations

import re
from pathlib import Path

from gpuready_components import platforms

from .settings import readme_table

README = Path(__file__).resolve().parent.parent / "README.md"


def tables() -> dict[str, str]:
    """Platform -> its README settings table."""
    modules = {platform.name: platform.stack() for platform in platforms.every()}
    return {platform: readme_table(platform, m.SETTINGS, m.CLOUD_KEYS) for platform, m in modules.items()}


MARKERS = re.compile(r"(<!-- settings: ([\w-]+) -->\n)(.*?)(\n<!-- /settings -->)", re.S)
"""A generated table in the README: between ``<!-- settings: PLATFORM -->`` and ``<!-- /settings -->``."""


def regenerate(readme: str) -> str:
    """``readme`` with each generated settings table replaced by what the declarations give now."""
    generated = tables()
    return MARKERS.sub(lambda m: m.group(1) + generated[m.group(2)] + m.group(4), readme)


if __name__ == "__main__":  # python -m gpuready_stacks.readme: rewrite the README's settings tables
    README.write_text(regenerate(README.read_text()))
