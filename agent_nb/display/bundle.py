"""``_repr_mimebundle_`` in one place: text always, HTML built only when it is wanted."""

from __future__ import annotations

from collections.abc import Callable, Container

__all__ = ["mimebundle"]


def mimebundle(
    plain: str,
    html: Callable[[], str],
    include: Container[str] | None = None,
    exclude: Container[str] | None = None,
) -> dict[str, str]:
    """The bundle a notebook asks for: ``text/plain`` and ``text/html``, filtered by include/exclude."""

    def wanted(kind: str) -> bool:
        return (not include or kind in include) and (not exclude or kind not in exclude)

    bundle = {}
    if wanted("text/plain"):
        bundle["text/plain"] = plain
    if wanted("text/html"):
        bundle["text/html"] = html()
    return bundle
