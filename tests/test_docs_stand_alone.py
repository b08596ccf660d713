"""The docs stand alone: a person who clones ikigai has every page and file
the README and docs/ send them to (issue 28, defect 5: architecture.md once
sent readers to a design page outside the repository)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_LINK = re.compile(r"\]\(([^)\s]+)\)")
# a path in backticks that names a file outside the checkout: ../x, ~/..., /work/...
_OUTSIDE = re.compile(r"`(\.\./[^`]+|[^`]*shared/DESIGN\.md[^`]*)`")


def targets(page: Path) -> list[str]:
    return [m.group(1) for m in _LINK.finditer(page.read_text(encoding="utf-8"))]


def broken_links(page: Path) -> list[str]:
    bad = []
    for target in targets(page):
        if re.match(r"[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL, or an anchor in the same page
        path = (page.parent / target.split("#")[0]).resolve()
        if not path.is_relative_to(ROOT) or not path.exists():
            bad.append(target)
    return bad


def test_every_relative_link_resolves_inside_the_repository():
    assert len(PAGES) > 5
    assert {str(p.relative_to(ROOT)): broken_links(p) for p in PAGES if broken_links(p)} == {}


def test_no_page_names_a_file_outside_the_repository():
    found = {
        str(p.relative_to(ROOT)): _OUTSIDE.findall(p.read_text(encoding="utf-8")) for p in PAGES
    }
    assert {k: v for k, v in found.items() if v} == {}


def test_the_design_is_in_the_repository_and_the_map_links_it():
    design = ROOT / "docs" / "design.md"
    text = design.read_text(encoding="utf-8")
    for heading in ("## Layout", "## The flow of one prompt", "## providers", "## store"):
        assert heading in text
    assert "(design.md)" in (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def test_the_checks_can_fail(tmp_path: Path):
    page = tmp_path / "p.md"
    page.write_text("see [the design](../../shared/DESIGN.md) and `../shared/DESIGN.md`\n")
    assert broken_links(page) == ["../../shared/DESIGN.md"]
    assert _OUTSIDE.findall(page.read_text()) == ["../shared/DESIGN.md"]
