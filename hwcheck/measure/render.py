"""The bench table (stdout) and the per-precision progress bars (stderr), drawn with rich."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

STATUS_STYLE = {"ok": "green", "failed": "red", "skipped": "dim"}


def _plain(text: Any) -> str:
    """Text from outside made safe for a terminal, printed as it is (no rich markup)."""
    from hwcheck.base.safe import terminal_text

    return terminal_text(text)


def clean(text: Any) -> str:
    """Text from outside (file names, reasons, device names) made safe for a terminal and rich markup."""
    from hwcheck.base.safe import terminal_text

    return terminal_text(text, markup=True)


def _say(console: Any, text: str, indent: str = "", first: str | None = None, style: str = "") -> None:
    """One line of plain text (terminal_text already applied), wrapped to the console under its
    indent: a continuation never restarts at column 0."""
    from rich.text import Text

    from hwcheck.base.wrap import wrap_text

    for part in wrap_text(text, console.width, indent, first):
        console.print(Text(part, style=style), soft_wrap=True)


def render_bench(document: dict[str, Any], console: Any = None) -> None:
    """Print each bench block: the table, the recommendation beside the measured best, findings."""
    if console is None:
        from hwcheck.render.console import output

        with output() as console:
            render_bench(document, console)
        return
    for block in document.get("benches") or [document]:
        _render_block(block, console)


def _render_block(block: dict[str, Any], console: Any) -> None:
    from rich.table import Table

    workload = block["workload"]
    what = clean(workload["script"]) if workload["script"] else workload["name"]
    device = block["device"]
    where = f"{device['kind']}" + (f" ({clean(device['name'])})" if device.get("name") else "")
    title = f"hwcheck bench: {what} · {clean(block['framework'])} · {where} · " + (
        f"{block['rounds']} rounds after {block['warmup']} warm-up steps"
        if block.get("rounds")
        else f"{block['steps']} timed steps after {block['warmup']} warm-up"
    )
    table = Table(title=title, title_justify="left", box=None, pad_edge=False)
    for column, justify in (
        ("precision", "left"),
        ("steps", "right"),
        ("ms/step (IQR)", "right"),
        ("speed-up", "right"),
        ("peak MiB", "right"),
        ("loss", "left"),
        ("status", "left"),
    ):
        # A precision's name is never cut ("mixed_float16-nos…") or split: the other cells fold.
        table.add_column(
            column,
            justify=justify,  # type: ignore[arg-type]
            overflow="fold",
            no_wrap=column == "precision",
        )
    from hwcheck.engine.verdict import loss_scaling_cost, paired_speedups

    # Speed-ups from the same paired comparison the lines below state (a block recorded before
    # they were is shown with the figures it holds the rounds for).
    for result in paired_speedups(block["results"]):
        table.add_row(
            result["variant"],
            str(result.get("steps", "–")),
            _timing(result),
            "–" if result["speedup"] is None else f"{result['speedup']:.2f}x",
            "–" if result["peak_memory_mib"] is None else f"{result['peak_memory_mib']:.0f}",
            _loss(result),
            _status(result),
        )
    console.print(table)
    for result in block["results"]:
        for note in result["notes"]:
            _say(console, _plain(f"{result['variant']}: {note}"), "    ", "  ", "dim")
    recommended, best = block["recommended"], block["best"]
    chosen = recommended["variant"]
    chosen_ms = recommended["ms_per_step"]
    line = f"Recommended: {chosen}" + (f" ({chosen_ms:.3g} ms/step)" if chosen_ms else " (not measured)")
    verdict = block.get("verdict")
    if best is not None and verdict != "too noisy":
        line += f"   measured best: {best['variant']} ({best['ms_per_step']:.3g} ms/step)"
        if best.get("ties"):
            line += f", tied with {', '.join(best['ties'])}"
        line += f"   → {block['agreement']}"
    elif verdict == "too noisy":
        line += "   measured best: none, too noisy to rank"
    _say(console, _plain(line), "  ", "", style="bold")
    for compared in block.get("comparisons") or []:
        _say(console, _plain(_compared(compared)), "    ", "  ", "dim")
    environment = block.get("environment")
    if environment:
        _say(console, _plain(_environment(block, environment)), "    ", "  ", "dim")
    # Judged again from the results, as the speed-ups are: the cost and its interval from one comparison.
    cost = loss_scaling_cost(block["results"]) if block.get("loss_scaling_cost") else None
    if cost:
        # The interval of the same comparison the cost comes from (older blocks: the runs' noise).
        spread = (
            f"interval {cost['low'] - 1.0:+.0%} to {cost['high'] - 1.0:+.0%}"
            if "low" in cost and "high" in cost
            else f"noise ±{cost['noise']:.0%}"
        )
        _say(
            console,
            f"Loss scaling: mixed_float16 took {_ms(cost['with_ms'])} ms/step scaled, "
            f"{_ms(cost['without_ms'])} unscaled ({cost['cost']:+.0%}, {spread}: "
            f"{cost['comparison']}); float16 without scaling only prices the scaling, "
            "never a recommendation.",
            "  ",
            "",
        )
    for finding in block["findings"]:
        _say(console, _plain(f"! {finding['severity']} {finding['message']}"), "  ", style="yellow")
        if finding.get("remedy"):
            _say(console, _plain(f"→ {finding['remedy']}"), "    ", "  ")
    console.print()


def _compared(compared: dict[str, Any]) -> str:
    """One comparison with the fastest, as a sentence with its interval and words that match it."""
    over = f" over {compared['rounds']} rounds" if compared.get("rounds") else ""
    return (
        f"{compared['variant']} against {compared['against']}: {compared['ratio']:.2f}x the step time "
        f"(interval {compared['low']:.2f}-{compared['high']:.2f}x{over}): {verdict_words(compared)}"
    )


def verdict_words(compared: dict[str, Any]) -> str:
    """What a comparison's numbers say, in words: a clear ratio beyond the margin is never a tie."""
    from hwcheck.facts.stats import ROUNDS_FLOOR

    margin = f"the {round(ROUNDS_FLOOR * 100)} % margin"
    result, ratio = compared["result"], compared["ratio"]
    if result == "unsteady":
        return "too unsteady to rank"
    if not compared.get("rounds"):
        # Medians of separate runs: the runs' own spread is the margin.
        return {"slower": "slower", "faster": "faster"}.get(result, "a tie within the runs' noise")
    if result in ("slower", "faster"):
        return f"{result}, beyond {margin}"
    if ratio > 1.0 + ROUNDS_FLOOR:
        return f"slower, but not by {margin} (its interval reaches within it)"
    if ratio < 1.0 / (1.0 + ROUNDS_FLOOR):
        return f"faster, but not by {margin} (its interval reaches within it)"
    return f"within {margin}: a tie"


def _environment(block: dict[str, Any], environment: dict[str, Any]) -> str:
    """The rounds, the threads every precision had, and the other work on the machine."""
    pinned = environment.get("pinned")
    where = f" on core(s) {', '.join(str(c) for c in pinned)}" if pinned else ""
    during = environment.get("busy_during") or []
    before = environment.get("busy_before")
    other = "other work unknown"
    if before is not None:
        other = f"other work: {before:g} cores busy before"
        if during:
            other += f", {min(during):g}-{max(during):g} during"
    rounds = block.get("rounds")
    taken = f"{rounds} interleaved round{'s' if rounds != 1 else ''}, " if rounds else ""
    return f"{taken}{environment['threads']} thread(s) of {environment['cores']} cores{where}; {other}"


def _timing(result: dict[str, Any]) -> str:
    timing = result["ms_per_step"]
    if timing is None or result["status"] != "ok":
        return "–"
    return f"{_ms(timing['median'])} ({_ms(timing['iqr'])})"


def _ms(value: float) -> str:
    """Milliseconds to three significant figures, never in exponent form."""
    if value >= 100:
        return f"{value:.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def _loss(result: dict[str, Any]) -> str:
    loss = result["loss"]
    if loss is None:
        return "–"
    if not loss["finite"]:
        return "[red]non-finite[/]"
    return "[green]decreasing[/]" if loss["decreased"] else "[yellow]finite, flat[/]"


def _status(result: dict[str, Any]) -> str:
    style = STATUS_STYLE.get(result["status"], "")
    text = f"[{style}]{result['status']}[/]"
    if result["reason"]:
        text += f" {clean(result['reason'])}"
    return text


class ProgressBars(AbstractContextManager["ProgressBars"]):
    """One progress bar per precision on standard error; call the instance with (variant, done, total)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(
            TextColumn("{task.description:<22}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> ProgressBars:
        self._progress.start()
        return self

    def __exit__(self, exc_type: object, *exc_info: object) -> None:
        if exc_type is not None:
            self._progress.live.transient = True  # an error's one line stands alone
        self._progress.stop()

    def __call__(self, variant: str, done: int, total: int) -> None:
        """Move `variant`'s bar to `done` of `total` steps, adding the bar on first sight."""
        if variant not in self._tasks:
            self._tasks[variant] = self._progress.add_task(variant, total=total)
        self._progress.update(self._tasks[variant], completed=done, total=total)
