"""The playground: talk to an agent or a workflow, switch its route and context modes between turns.

Every control has a Python way to drive it — ``send("...")``, ``route.value = "smart"``,
``modes["writer"].value = "last_agent"``, ``reset()`` — and the work runs on the
kernel's event loop, never blocking it. While a turn runs, Send is disabled; a failed turn
is shown with its message and changes nothing.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import os
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import ipywidgets as w

from ..contents import shorten
from ..dialogue import Dialogue, Exchange
from ..disk import os_problem, write_whole
from ..display.graph import workflow_html
from ..display.html import container, escape
from ..display.transcript import EMPTY_TRANSCRIPT, running_turn_html, transcript_html, turn_html
from ..errors import UsageError
from ..messages import AgentResponseUpdate
from ..trace import ContextSnapshot, Trace
from .background import Background
from .switchers import ContextModeSwitcher, ContextView, RouteSwitcher, problem_html

if TYPE_CHECKING:
    from ..dialogue import Filter
    from ..routing import RoutingChatClient
    from ..sessions import AgentSession
    from ..workflow import RunResult, WorkflowEvent

__all__ = ["Playground"]

log = logging.getLogger("agent_nb.widgets")


class Playground(w.VBox):  # type: ignore[misc]
    """A chat with ``target`` (an agent or a workflow), its route and modes, and the live run view.

    Args:
        target: an agent or a ``Workflow``.
        router: the ``RoutingChatClient`` to switch (found among the agents' clients if not given).
        session: the session of an agent target.
        filters: named context filters to offer as ``custom: <name>`` modes.
        export_dir: where the export buttons write the conversation.
    """

    def __init__(
        self,
        target: Any,
        *,
        router: RoutingChatClient | None = None,
        session: AgentSession | None = None,
        filters: Mapping[str, Filter] | None = None,
        export_dir: str | Path = ".",
    ) -> None:
        self.dialogue = Dialogue(target, router=router, session=session, filters=filters)
        self.export_dir = Path(export_dir)
        self.last_error: BaseException | None = None
        self._work = Background()
        self._live: dict[str, str] = {}
        self._snapshots: list[ContextSnapshot] = []

        self.text = w.Text(placeholder="Type a message and press Enter")
        self.text.layout.width = "60%"
        self.send_button = w.Button(description="Send", button_style="primary", icon="paper-plane")
        self.reset_button = w.Button(description="Reset", icon="rotate-left")
        self.export_html_button = w.Button(description="Export HTML", icon="download")
        self.export_json_button = w.Button(description="Export JSON", icon="download")
        self.route = RouteSwitcher(self.dialogue.router, dialogue=self.dialogue) if self.dialogue.router else None
        self.modes = {eid: ContextModeSwitcher(ex, dialogue=self.dialogue) for eid, ex in self.dialogue.agents.items()}
        self.status = w.HTML()
        self.transcript = w.VBox(layout=w.Layout(max_height="28em", overflow="auto"))
        """One HTML widget per finished turn, then the turn under way: a turn is sent to the page once."""
        self.live = w.HTML()
        """The turn under way, redrawn as its words stream in (only it: not the turns before)."""
        self._style = w.HTML(container(""))  # the stylesheet, once, for the turns' markup
        self._empty = w.HTML(f'<div class="anb">{EMPTY_TRANSCRIPT}</div>')
        self._turns: list[w.HTML] = []
        self._drawn_live = self._drawn_view = 0.0
        self._later: asyncio.TimerHandle | None = None
        self.view = ContextView(stylesheet=False)  # self._style carries it, once

        self.send_button.on_click(lambda _: self.send())
        with warnings.catch_warnings():  # ipywidgets 8 deprecates it, and offers nothing else that is Enter alone
            warnings.simplefilter("ignore", DeprecationWarning)
            self.text.on_submit(lambda _: self.send())  # Enter sends (a blur does not, as it would with observe)
        self.reset_button.on_click(lambda _: self.reset())
        self.export_html_button.on_click(lambda _: self._export(".html"))
        self.export_json_button.on_click(lambda _: self._export(".json"))

        controls = [c for c in (self.route, *self.modes.values()) if c is not None]
        super().__init__(
            [
                w.HBox([self.text, self.send_button, self.reset_button]),
                w.HBox(controls, layout=w.Layout(flex_flow="row wrap")),
                self.status,
                self.transcript,
                self.view,
                w.HBox([self.export_html_button, self.export_json_button]),
            ]
        )
        self.add_class("anb-playground")  # for a browser, and for a stylesheet
        for part, name in ((self.status, "status"), (self.transcript, "transcript"), (self.view, "view")):
            part.add_class(f"anb-{name}")
        self._redraw_transcript()
        self._redraw()

    # -- driving it -------------------------------------------------------------------

    def send(self, text: str | None = None) -> asyncio.Task[Exchange | None] | Exchange | None:
        """Send ``text`` (or what is typed in the box) as the next turn.

        In a notebook the turn runs on the kernel's loop and this returns its task (``await``
        it to wait); with no loop running (a script) it runs the turn to the end.
        """
        message = self.text.value if text is None else text
        if not message.strip() or self.send_button.disabled:
            return None  # nothing to send, or a turn already on its way: no double send
        self.send_button.disabled = True
        return self._work.start(self._turn(message))

    async def wait(self) -> None:
        """Wait until everything started from the controls (Send, Enter) has finished."""
        await self._work.wait()

    def reset(self) -> None:
        """Start the conversation again (routes and modes stay as chosen)."""
        try:
            self.dialogue.reset()
        except Exception as exc:
            self._show_error(exc)
            return
        self.last_error = None
        self._snapshots, self._live = [], {}
        self.status.value = ""
        self._redraw_transcript()
        self._redraw()

    def export_html(self, path: str | Path | None = None) -> Path:
        """Write the transcript and every turn's run view as a standalone page.

        By default in ``export_dir``, named after the workflow (made safe: see ``export_name``).
        A place that cannot be written (read-only, full, missing) raises ``UsageError`` naming it.
        """
        target = Path(path) if path is not None else self._default_export(".html")
        _write_export(target, self.dialogue.to_html())
        return target

    def export_json(self, path: str | Path | None = None) -> Path:
        """Write every turn, with its route, modes and trace, as JSON (where and how as ``export_html``)."""
        target = Path(path) if path is not None else self._default_export(".json")
        _write_export(target, self.dialogue.to_json())
        return target

    def _export(self, suffix: str) -> None:
        """What the Export buttons do: write the file beside the notebook, and offer it to the browser.

        The person clicking may not be on the machine that runs the kernel (a Voila page, a shared
        server): the status line carries a download link with the export itself, so their browser
        saves it; a directory that cannot be written is said, and the download still works.
        """
        try:
            html = suffix == ".html"
            text, kind = (
                (self.dialogue.to_html(), "text/html") if html else (self.dialogue.to_json(), "application/json")
            )
            target = self._default_export(suffix)
        except Exception as exc:  # nothing to offer: say why, in the widget
            self._show_error(exc)
            return
        try:
            _write_export(target, text)
            said = f"wrote {escape(target)}"
        except UsageError as exc:
            self.last_error = exc
            said = f"not written on the server: {escape(exc)}"
        data = base64.b64encode(text.encode("utf-8")).decode("ascii")
        link = (
            f'<a class="anb-download" download="{escape(target.name)}" href="data:{kind};charset=utf-8;base64,{data}">'
            f"download {escape(target.name)}</a>"
        )
        self.status.value = f'<div class="anb"><div class="meta">{said} · {link}</div></div>'

    def _default_export(self, suffix: str) -> Path:
        """``export_dir``/<the workflow's name, made safe><suffix>, within the name limit of that directory."""
        try:
            limit = min(NAME_MAX, os.pathconf(self.export_dir, "PC_NAME_MAX"))
        except (AttributeError, OSError, ValueError):  # no pathconf (Windows), or no such directory yet
            limit = NAME_MAX
        return self.export_dir / export_name(self.dialogue.workflow.name, suffix, limit)

    # -- outside a live kernel -------------------------------------------------------

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        """The live widget, and beside it what it shows now, for where no kernel runs it.

        An exported page, a closed notebook or a renderer without widgets shows the transcript and
        the run view instead of an empty output.
        """
        data: dict[str, Any] = super()._repr_mimebundle_(**kwargs)
        data["text/plain"] = self.to_text()
        data["text/html"] = self.snapshot_html()
        return data

    def snapshot_html(self) -> str:
        """The transcript and the latest run view, as static HTML (no controls)."""
        d = self.dialogue
        note = (
            f'<div class="meta">playground of {escape(d.workflow.name)}, as it was when shown: '
            "run the notebook to talk to it</div>"
        )
        return container(note + transcript_html(d.exchanges)) + self.view.value

    def to_text(self) -> str:
        d = self.dialogue
        lines = [f"Playground({d.workflow.name!r}): {len(d.exchanges)} turn{'' if len(d.exchanges) == 1 else 's'}"]
        for e in d.exchanges:
            lines.append(f"  turn {e.number} · you: {shorten(e.text, 80)}")
            lines += [f"    {executor}: {shorten(reply, 80)}" for executor, reply in e.answers]
        return "\n".join(lines)

    # -- what happens -----------------------------------------------------------------

    async def _turn(self, message: str) -> Exchange | None:
        self.send_button.disabled = True
        self.text.disabled = True
        self._live, self._snapshots = {}, []
        self.status.value = '<div class="anb"><div class="meta">running…</div></div>'  # styled by self._style
        self._redraw_live(message, force=True)
        self._redraw_transcript(running=True)
        self._redraw(pending=message)  # small (nothing ran yet), and it holds the next full redraw back
        try:
            exchange = await self.dialogue.send(message, on_event=lambda e: self._event(e, message))
        except Exception as exc:
            self._show_error(exc)
            log.error("turn failed: %s", exc, exc_info=exc)
            self._redraw_transcript()
            last = self.dialogue.exchanges[-1] if self.dialogue.exchanges else None
            self._redraw(failed=last.result if last is not None and last.error else None)
            return None
        finally:
            if self._later is not None:  # a redraw of the live turn still to come: the turn is over
                self._later.cancel()
                self._later = None
            self.send_button.disabled = False
            self.text.disabled = False
        self.last_error = None
        self.status.value = ""
        self.text.value = ""
        self._redraw_transcript()
        self._redraw()
        return exchange

    def _event(self, event: WorkflowEvent, message: str) -> None:
        if event.type in ("output", "intermediate") and isinstance(event.data, AgentResponseUpdate):  # type: ignore[attr-defined]
            eid = event.executor_id  # type: ignore[attr-defined]
            self._live[eid] = self._live.get(eid, "") + event.data.text  # type: ignore[attr-defined]
            self._redraw_live(message)
        elif event.type == "executor_completed" and event.snapshot is not None:  # type: ignore[attr-defined]
            self._snapshots.append(event.snapshot)  # type: ignore[attr-defined]
            self._redraw_live(message, force=True)
            if time.monotonic() - self._drawn_view >= VIEW_EVERY:  # the whole run view: not for every step
                self._redraw(pending=message)

    def _show_error(self, exc: BaseException) -> None:
        self.last_error = exc
        self.status.value = problem_html(exc)

    def _redraw_live(self, message: str, *, force: bool = False) -> None:
        """The turn under way, at most every ``LIVE_EVERY`` seconds while words stream in (and when asked).

        Words that arrive sooner are drawn by a redraw set for the end of that interval, so the
        last words show even when the model pauses.
        """
        now = time.monotonic()
        wait = self._drawn_live + LIVE_EVERY - now
        if not force and wait > 0:
            if self._later is None:
                self._later = asyncio.get_running_loop().call_later(wait, self._redraw_live, message)
            return
        if self._later is not None:
            self._later.cancel()
            self._later = None
        self._drawn_live = now
        number = len(self.dialogue.exchanges) + 1
        self.live.value = f'<div class="anb">{running_turn_html(number, message, list(self._live.items()))}</div>'

    def _redraw_transcript(self, *, running: bool = False) -> None:
        """Add a widget for each turn that finished since (a reset starts again); the live turn last."""
        exchanges = self.dialogue.exchanges
        if len(self._turns) > len(exchanges):  # a reset: the old turns' widgets are closed, not left in the kernel
            for old in self._turns:
                for part in (old.layout, old.style, old):  # each HTML widget opens its layout and style too
                    part.close()
            self._turns = []
        for e in exchanges[len(self._turns) :]:
            self._turns.append(w.HTML(f'<div class="anb">{turn_html(e)}</div>'))
        body = [*self._turns, self.live] if running else list(self._turns)
        self.transcript.children = (self._style, *(body or [self._empty]))

    def _redraw(self, *, pending: str | None = None, failed: RunResult | None = None) -> None:
        """The run view: of the turn under way, of a turn that failed (what arrived, what was dropped), or the last."""
        d = self.dialogue
        self._drawn_view = time.monotonic()
        if failed is not None:
            self.view.update([*d.results, failed])
        elif pending is not None:
            from ..workflow import RunResult

            partial = Trace(self._snapshots, tuple(d.workflow.executors))
            self.view.update([*d.results, RunResult((), partial, "running", d.workflow)])
        elif d.results:
            self.view.update(d.results)
        else:
            self.view.value = container(
                f'<div class="meta">{escape(d.workflow.name)}: no turns yet</div>'
                f'<div class="graph">{workflow_html(d.workflow)}</div>'
            )


LIVE_EVERY = 0.1
"""Seconds between two redraws of a reply streaming in: a fast model's words are drawn in batches."""

VIEW_EVERY = 0.5
"""Seconds between two redraws of the run view while a turn runs (it is drawn again when the turn ends)."""

NAME_MAX = 255
"""The longest file name, in bytes, most file systems take (ext4, xfs, btrfs, APFS, NTFS in UTF-16 units)."""


def export_name(name: str, suffix: str, limit: int = NAME_MAX) -> str:
    """A file name for an export of workflow ``name``: letters and digits, runs of anything else as one ``-``.

    It has no separator, dot-dot or control character, so it stays in the export directory, and it
    fits in ``limit`` bytes of UTF-8 with ``suffix``: a longer name keeps its start and gets a short
    hash of the whole name, so two long names that differ only at the end do not share a file.
    """
    slug = "-".join(part for part in "".join(c if c.isalnum() else "-" for c in name).split("-") if part)
    slug = slug or "conversation"
    room = limit - len(suffix.encode())
    if len(slug.encode()) > room:
        tag = "-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:10]
        kept = slug.encode()[: room - len(tag)].decode("utf-8", "ignore").rstrip("-")
        slug = kept + tag
    return slug + suffix


_ELSEWHERE = (
    "export to a directory you can write to: export_html(path), export_json(path) or Playground(export_dir=...)"
)


def _write_export(target: Path, text: str) -> None:
    """Write an export whole or not at all (a temporary file renamed over it); a failure names the path."""
    try:
        write_whole(target, text.encode("utf-8"))
    except OSError as exc:
        why = os_problem(exc, target.parent, _ELSEWHERE)
        raise UsageError(f"Playground: cannot write the export {target}: {why}") from exc
