#!/usr/bin/env python3
"""Inter-token gaps over time, per request, from `cohort bench-serve -o json`
(or --save-result) files: one panel per input file, titled by its "label"
(set with --label, e.g. the server's --phase-policy).

Each request is one line: x is the arrival time of a chunk (seconds after the
start of the run), y the gap since the request's previous chunk (ms). The
first token is marked at its TTFT, so that waits before the first token show
as well.

    scripts/plot_itl.py mixed.json cohort.json -o itl.png
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        data = json.load(f)
    if "requests" not in data:
        sys.exit(f"error: {path}: no 'requests' (not a bench-serve JSON report?)")
    return data


def draw_panel(ax, data, title):
    for r in data["requests"]:
        chunks = r.get("chunk_s") or []
        if not chunks:
            continue
        xs = chunks[1:]
        gaps = [(b - a) * 1e3 for a, b in zip(chunks, chunks[1:])]
        line, = ax.plot(xs, gaps, marker=".", markersize=3, linewidth=0.8,
                        label=f"{r['name']} ({len(chunks)} chunks)")
        ttft = (chunks[0] - r["send_s"]) * 1e3
        ax.plot([chunks[0]], [ttft], marker="x", color=line.get_color(), markersize=7)
    s = data.get("summary", {})
    itl = s.get("itl_ms", {})
    sub = (f"ITL p50 {itl.get('p50', 0):.1f} ms, p99 {itl.get('p99', 0):.1f} ms, "
           f"max {itl.get('max', 0):.1f} ms; makespan {s.get('makespan_s', 0):.2f} s")
    ax.set_title(f"{title}\n{sub}", fontsize=9)
    ax.set_xlabel("time since start (s)")
    ax.set_ylabel("gap to previous token (ms); x = TTFT")
    ax.set_yscale("log")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("inputs", nargs="+", help="bench-serve JSON reports")
    ap.add_argument("-o", "--output", required=True, help="image file to write (.png, .svg, ...)")
    ap.add_argument("--dpi", type=int, default=80)
    args = ap.parse_args()

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reports = [load(p) for p in args.inputs]
    fig, axes = plt.subplots(len(reports), 1, figsize=(9, 3.2 * len(reports)), squeeze=False, sharex=True)
    for ax, path, data in zip(axes[:, 0], args.inputs, reports):
        draw_panel(ax, data, data.get("label") or path)
    fig.tight_layout()
    fig.savefig(args.output, dpi=args.dpi)
    print(f"wrote {args.output}")


if __name__ == "__main__":
    main()
