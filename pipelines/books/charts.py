"""Inline SVG charts for the book report: horizontal bars and vertical columns."""

from __future__ import annotations

import html

import numpy as np

_BAR = "#3b6ea8"
_ACCENT = "#d08c2c"
_INK = "#222222"
_GRID = "#d9d9d9"
#: A glyph's width, at most, in ems, for the digits, letters and signs of value texts.
TEXT_EM = 0.62


def esc(text: object) -> str:
    """Return text escaped for HTML and SVG, quotes included."""
    return html.escape(str(text), quote=True)


def bar_chart_svg(
    labels: list[str],
    values: list[float],
    title: str,
    value_text: list[str] | None = None,
    width: int = 560,
    bar_height: int = 22,
    color: str = _BAR,
) -> str:
    """Return a horizontal bar chart as inline SVG, one labelled bar per value.

    The bars take `width` less 200 px; the chart is widened when a value's text would not
    fit after its bar.
    """
    value_text = value_text or [f"{v:g}" for v in values]
    label_w, pad, top = 90, 8, 30
    plot_w = width - label_w - 110
    height = top + len(values) * (bar_height + pad) + pad
    peak = max(values) if values and max(values) > 0 else 1.0
    # The text's room after each bar: an upper bound of 12 px sans-serif glyphs' widths.
    needed = max(
        (
            label_w + (plot_w * v / peak if v > 0 else 0.0) + 6 + TEXT_EM * 12 * len(t) + pad
            for v, t in zip(values, value_text, strict=True)
        ),
        default=0.0,
    )
    width = max(width, int(needed + 1))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" aria-label="{esc(title)}">',
        f"<title>{esc(title)}</title>",
        f'<text x="0" y="18" font-size="15" font-weight="bold" fill="{_INK}">{esc(title)}</text>',
    ]
    for i, (label, value, text) in enumerate(zip(labels, values, value_text, strict=True)):
        y = top + i * (bar_height + pad)
        w = max(1.0, plot_w * value / peak) if value > 0 else 0.0
        parts.append(
            f'<text x="{label_w - 6}" y="{y + bar_height * 0.72:.1f}" font-size="13" '
            f'text-anchor="end" fill="{_INK}">{esc(label)}</text>'
            f'<rect class="bar" x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_height}" '
            f'fill="{color}" data-label="{esc(label)}" data-value="{value:g}"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + bar_height * 0.72:.1f}" font-size="12" '
            f'fill="{_INK}">{esc(text)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def column_chart_svg(
    values: list[int],
    title: str,
    x_label: str,
    y_label: str,
    log: bool = False,
    width: int = 720,
    height: int = 260,
    color: str = _ACCENT,
) -> str:
    """Return a vertical column chart (x = index) as inline SVG, optionally on a log scale."""
    left, right, top, bottom = 64, 12, 30, 40
    plot_w, plot_h = width - left - right, height - top - bottom

    def scale(v: float) -> float:
        return float(np.log10(v + 1)) if log else float(v)

    peak = max((scale(v) for v in values), default=1.0) or 1.0
    step = plot_w / max(1, len(values))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" aria-label="{esc(title)}">',
        f"<title>{esc(title)}</title>",
        f'<text x="0" y="18" font-size="15" font-weight="bold" fill="{_INK}">{esc(title)}</text>',
        f'<line x1="{left}" y1="{top + plot_h}" x2="{left + plot_w}" y2="{top + plot_h}" '
        f'stroke="{_INK}"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="{_INK}"/>',
    ]
    if log:
        ticks = [10**e for e in range(0, int(peak) + 1) if scale(10**e) <= peak]
    else:
        ticks = list(np.linspace(0, peak, 5)[1:])
    for tick in ticks:
        y = top + plot_h - plot_h * scale(tick) / peak
        parts.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_w}" y2="{y:.1f}" stroke="{_GRID}"/>'
            f'<text x="{left - 4}" y="{y + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="{_INK}">{int(round(tick)):,}</text>'
        )
    label_every = max(1, len(values) // 20)
    for i, value in enumerate(values):
        h = plot_h * scale(value) / peak
        x = left + i * step
        parts.append(
            f'<rect class="column" x="{x + step * 0.1:.1f}" y="{top + plot_h - h:.1f}" '
            f'width="{step * 0.8:.1f}" height="{h:.1f}" fill="{color}" data-x="{i}" '
            f'data-value="{value}"/>'
        )
        if i % label_every == 0:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{top + plot_h + 14}" font-size="11" '
                f'text-anchor="middle" fill="{_INK}">{i}</text>'
            )
    parts.append(
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" font-size="12" text-anchor="middle" '
        f'fill="{_INK}">{esc(x_label)}</text>'
        f'<text x="12" y="{top + plot_h / 2:.1f}" font-size="12" text-anchor="middle" '
        f'fill="{_INK}" transform="rotate(-90 12 {top + plot_h / 2:.1f})">{esc(y_label)}</text>'
        "</svg>"
    )
    return "".join(parts)
