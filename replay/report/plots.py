"""Plots as inline SVG, drawn with matplotlib (the optional extra ``report``).

Every function returns an ``<svg>`` element as text, ready to put in a page; text
stays text (searchable, crisp) and the output is deterministic for the same input.
The evaluation's HTML report uses :func:`latency_distribution` as well.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from replay.report.signals import Band, Vote


def _mpl() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("faultline report draws with matplotlib, the optional extra "
                           "'report': pip install 'faultline[report]'") from None
    matplotlib.use("Agg", force=True)
    matplotlib.rcParams.update({"svg.fonttype": "none", "svg.hashsalt": "faultline",
                                "font.size": 9, "axes.spines.top": False,
                                "axes.spines.right": False, "figure.dpi": 100})
    import matplotlib.pyplot as plt
    return plt


def to_svg(fig: Any) -> str:
    """The figure as one ``<svg>`` element (no XML header, no metadata), then closed."""
    plt = _mpl()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    return text[text.index("<svg"):]


def _clock(t0: float) -> Any:
    def fmt(x: float, _pos: Any = None) -> str:
        return f"+{x - t0:.0f}s"
    return fmt


def _moments(ax: Any, marks: Sequence[tuple[float, str, str]]) -> None:
    for x, text, color in marks:
        if x is None or not math.isfinite(x):
            continue
        ax.axvline(x, color=color, linestyle="--", linewidth=1)
        ax.annotate(text, (x, 1.0), xycoords=("data", "axes fraction"), rotation=90,
                    va="top", ha="right", fontsize=8, color=color)


def _figure(rows: int = 1, height: float = 2.4) -> tuple[Any, Any]:
    plt = _mpl()
    fig, axes = plt.subplots(rows, 1, figsize=(7.5, height * rows), sharex=True, squeeze=False)
    return fig, [ax for (ax,) in axes]


def band_plot(b: Band, what: str, unit: str, marks: Sequence[tuple[float, str, str]],
              t0: float) -> str:
    """A rank's value per step against its peers' median and 10-90 % band."""
    from matplotlib.ticker import FuncFormatter
    fig, (ax,) = _figure(height=2.8)
    ax.fill_between(b.ts, b.lo, b.hi, color="#bcd3ea", label="peers, 10-90 %", step="mid")
    ax.plot(b.ts, b.median, color="#2f6fae", linewidth=1, label="peer median")
    ax.plot(b.ts, b.value, color="#c0392b", linewidth=1.4, label=f"rank {b.rank}")
    ax.set_ylabel(f"{what} ({unit})" if unit else what)
    ax.xaxis.set_major_formatter(FuncFormatter(_clock(t0)))
    _moments(ax, marks)
    ax.legend(loc="upper left", fontsize=8, frameon=False, ncol=3)
    return to_svg(fig)


def vote_plot(v: Vote, marks: Sequence[tuple[float, str, str]], t0: float) -> str:
    """The checksum vote of the rank's peer group per step; the rank's own vote marked."""
    from matplotlib.ticker import FuncFormatter
    fig, (ax,) = _figure(height=2.4)
    ax.bar(v.ts, v.agree, width=0.8, color="#9cc5a1", label="agree with the majority")
    ax.bar(v.ts, v.disagree, bottom=v.agree, width=0.8, color="#e07b6a",
           label="disagree")
    bad = ~v.target_agrees
    if bad.any():
        ax.scatter(v.ts[bad], (v.agree + v.disagree)[bad] + 0.3, marker="v", color="#c0392b",
                   s=14, label=f"rank {v.rank} disagrees", zorder=3)
    ax.set_ylabel("replicas")
    ax.xaxis.set_major_formatter(FuncFormatter(_clock(t0)))
    _moments(ax, marks)
    ax.legend(loc="lower left", fontsize=8, frameon=False, ncol=3)
    return to_svg(fig)


def lines_plot(panels: Sequence[tuple[str, Sequence[tuple[np.ndarray, np.ndarray, str, str]]]],
               marks: Sequence[tuple[float, str, str]], t0: float) -> str:
    """Stacked panels sharing time: each a label and its lines (ts, values, name, color)."""
    from matplotlib.ticker import FuncFormatter
    fig, axes = _figure(rows=len(panels), height=1.8)
    for ax, (label, lines) in zip(axes, panels, strict=True):
        for ts, ys, name, color in lines:
            if len(ts):
                ax.plot(ts, ys, color=color, linewidth=1.2, label=name,
                        drawstyle="steps-post" if name.startswith("XID") else "default")
        ax.set_ylabel(label)
        ax.legend(loc="upper left", fontsize=8, frameon=False, ncol=4)
        _moments(ax, marks)
    axes[-1].xaxis.set_major_formatter(FuncFormatter(_clock(t0)))
    return to_svg(fig)


def events_plot(events: Sequence[tuple[float, str]], counters: Sequence[
        tuple[np.ndarray, np.ndarray, str, str]], marks: Sequence[tuple[float, str, str]],
                t0: float, since: float, until: float) -> str:
    """XID events as stems with their codes, and cumulative ECC / NVLink counters."""
    from matplotlib.ticker import FuncFormatter
    fig, (ax,) = _figure(height=2.4)
    for ts, ys, name, color in counters:
        if len(ts):
            ax.step(ts, ys, where="post", color=color, linewidth=1.2, label=name)
    top = max([1.0] + [float(ys.max()) for ts, ys, _, _ in counters if len(ys)])
    for ts, text in events:
        ax.vlines(ts, 0, top, color="#8e44ad", linewidth=1.5)
        ax.annotate(text, (ts, top), fontsize=8, color="#8e44ad", ha="left", va="bottom")
    ax.set_xlim(since, until)
    ax.set_ylabel("count")
    ax.xaxis.set_major_formatter(FuncFormatter(_clock(t0)))
    _moments(ax, marks)
    if counters:
        ax.legend(loc="upper left", fontsize=8, frameon=False, ncol=3)
    return to_svg(fig)


def timeline(rows: Sequence[tuple[str, str]], bars: Sequence[tuple[str, float, float, str,
                                                                   str]],
             t0: float, t1: float) -> str:
    """Bars from onset to resolution on their unit's row, rows grouped (group, unit).

    ``bars``: (unit, start, end, color, text); a label's fault window is a thin grey bar.
    """
    from matplotlib.ticker import FuncFormatter
    plt = _mpl()
    n = max(1, len(rows))
    fig, ax = plt.subplots(figsize=(10, 0.34 * n + 0.9))
    index = {unit: i for i, (_, unit) in enumerate(rows)}
    span = max(t1 - t0, 1.0)
    for unit, a, b, color, text in bars:
        y = index[unit]
        thin = color == "label"
        b = min(b, t1)
        ax.broken_barh([(a, max(b - a, span / 400))], (y - (0.12 if thin else 0.32),
                                                      0.24 if thin else 0.64),
                       facecolors="#b0b0b0" if thin else color, edgecolor="none")
        if not text:
            continue
        if b > t1 - 0.25 * span and not thin:  # no room after the bar: inside, at its end
            ax.annotate(text, (b, y), xytext=(-4, 0), textcoords="offset points", va="center",
                        ha="right", fontsize=8, color="white")
        else:
            ax.annotate(text, (b, y), xytext=(4, 0), textcoords="offset points", va="center",
                        fontsize=8, color="#555555" if thin else "#222222")
    ax.set_yticks(range(n), [f"{g} · {u}" if g else u for g, u in rows], fontsize=8)
    ax.set_ylim(n - 0.5, -0.5)
    ax.set_xlim(t0, t1 + span * 0.12)
    ax.xaxis.set_major_formatter(FuncFormatter(_clock(t0)))
    ax.grid(axis="x", color="#eeeeee")
    return to_svg(fig)


def latency_distribution(by_kind: dict[str, Sequence[float]], title: str = "") -> str:
    """Detection latency per kind: one box and its points (seconds, log scale when wide)."""
    plt = _mpl()
    kinds = [k for k, xs in by_kind.items() if len(xs)]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * max(1, len(kinds)) + 0.9))
    if kinds:
        data = [np.asarray(by_kind[k], dtype=float) for k in kinds]
        ax.boxplot(data, orientation="horizontal", widths=0.5, showfliers=False)
        for i, xs in enumerate(data, 1):
            ax.scatter(xs, np.full(len(xs), i), s=8, color="#2f6fae", alpha=0.6, zorder=3)
        ax.set_yticks(range(1, len(kinds) + 1), kinds)
        lo = min(float(x.min()) for x in data)
        hi = max(float(x.max()) for x in data)
        if hi > 0 and hi / max(lo, 0.05) > 50:
            ax.set_xscale("symlog", linthresh=0.1)
        ax.set_xlim(left=0)  # a latency is never negative
    ax.set_xlabel("detection latency (s)")
    if title:
        ax.set_title(title, fontsize=9, loc="left")
    return to_svg(fig)


def when(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
