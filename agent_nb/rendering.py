"""The render protocol: how an agent_nb object shows itself, wherever it is shown.

A type that can be displayed inherits ``Displayable``. It says what it is in plain text
(``to_text()``: cheap, always present, what ``str()``, a terminal, a log and a sanitising
renderer show). Every other form (the notebook's HTML, Mermaid, DOT, a figure) is drawn by
a renderer that the display layer registers for the type, so the types stay in their own
layers and never import the display layer. The first time an object is drawn, ``render``
imports ``agent_nb.display`` once, which registers every renderer: this is the only path
from a lower layer to the display layer.

```python
class Trace(Displayable):          # agent_nb.trace: data, and its text
    def to_text(self) -> str: ...

register(Trace, "html", trace_html)  # agent_nb.display.registry: how it is drawn
```
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Callable, Container
from typing import Any

from .errors import UsageError

__all__ = ["Displayable", "forms_of", "register", "render"]

Renderer = Callable[..., Any]

_RENDERERS: dict[tuple[type, str], Renderer] = {}


def register(cls: type, form: str, renderer: Renderer) -> None:
    """Draw instances of ``cls`` (and of its subclasses) as ``form`` with ``renderer(obj, **options)``."""
    _RENDERERS[(cls, form)] = renderer


def _lookup(cls: type, form: str) -> Renderer | None:
    for base in cls.__mro__:
        renderer = _RENDERERS.get((base, form))
        if renderer is not None:
            return renderer
    return None


def _renderer(cls: type, form: str) -> Renderer | None:
    renderer = _lookup(cls, form)
    if renderer is None:
        importlib.import_module(".display", __package__)  # registers every renderer, once
        renderer = _lookup(cls, form)
    return renderer


def forms_of(cls: type) -> list[str]:
    """The forms ``cls`` can be drawn in (after loading the display layer)."""
    _renderer(cls, "html")
    return sorted({form for base in cls.__mro__ for (kind, form) in _RENDERERS if kind is base})


def render(obj: object, form: str = "html", **options: Any) -> Any:
    """``obj`` drawn as ``form`` (``"html"``, ``"mermaid"``, ...) by the renderer registered for its type."""
    renderer = _renderer(type(obj), form)
    if renderer is None:
        forms = ", ".join(forms_of(type(obj))) or "none"
        raise UsageError(
            f"no renderer draws a {type(obj).__name__} as {form!r} (its forms: {forms}); "
            "register one with agent_nb.rendering.register(cls, form, renderer)"
        )
    return renderer(obj, **options)


def _wanted(kind: str, include: Container[str] | None, exclude: Container[str] | None) -> bool:
    return (not include or kind in include) and (not exclude or kind not in exclude)


class Displayable:
    """Gives a type ``str()``, ``_repr_html_`` and ``_repr_mimebundle_`` from ``to_text()`` and its renderers.

    ``text/plain`` is always in the bundle; ``text/html`` is drawn only when it is asked for.
    A type with no HTML renderer shows its text, escaped, in a ``<pre>``.
    """

    __slots__ = ()

    def to_text(self) -> str:
        """The object as plain text (``str()`` and a notebook's ``text/plain``)."""
        return repr(self)

    def __str__(self) -> str:
        return self.to_text()

    def _repr_html_(self) -> str:
        if _renderer(type(self), "html") is None:
            return f"<pre>{html.escape(self.to_text())}</pre>"
        return str(render(self, "html"))

    def _repr_mimebundle_(
        self, include: Container[str] | None = None, exclude: Container[str] | None = None, **kwargs: Any
    ) -> dict[str, str]:
        bundle = {"text/plain": self.to_text()}
        if _wanted("text/html", include, exclude):
            bundle["text/html"] = self._repr_html_()
        return bundle
