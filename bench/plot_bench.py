#!/usr/bin/python3
"""plot_bench.py — the records of `txops bench --json FILE` as a picture: one horizontal bar per case and thread
count, its fraction of the limit it is judged by (the record's judged_ratio / judged_limit: the copy bandwidth, the
state traffic's copy bandwidth for the gated delta rule's decode, the fp32 FMA peak for its prefill and backward),
the measurement method's target for that kind as a tick, the ISA and the machine's probes in the title. Written
next to the JSON (bench.json -> bench.png) so that a regression shows at a glance.

Needs matplotlib: Debian's python3-matplotlib (`make bench` installs it and runs this with /usr/bin/python3) or
any Python with matplotlib. Run: /usr/bin/python3 bench/plot_bench.py build/bench.json [--out FILE]
"""
import argparse
import json
import os
import sys

# The targets of the measurement method (docs/measurement.md), by record kind; none for the backward, which is
# judged by its time against the forward's.
TARGETS = {"rope": 0.85, "conv": 0.80, "gdr_decode": 0.80, "gdr_prefill": 0.55}


def load(path):
    """The records of one `txops bench --json` file, as a list of dicts."""
    with open(path) as f:
        return json.load(f)


def plot(records, out_path):
    """Writes the bar chart of `records` to out_path (PNG) and returns the number of bars."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [r for r in records if r.get("passed")]
    if not rows:
        raise SystemExit("plot_bench.py: no passed case in the records")
    rows.sort(key=lambda r: (r["suite"], r["op"], r["dtype"], r["shape"], r["threads"]))
    labels = [f'{r["suite"]} {r["op"]} {r["dtype"]} {r["shape"]} ({r["threads"]} thr)' for r in rows]
    values = [100 * r.get("judged_ratio", r.get("ratio", 0)) for r in rows]
    colors = ["#4878a8" if r["threads"] == 1 else "#e08040" for r in rows]
    fig, ax = plt.subplots(figsize=(13, max(3, 0.22 * len(rows) + 1.5)))
    y = list(range(len(rows)))
    ax.barh(y, values, color=colors, height=0.75)
    for i, r in enumerate(rows):
        target = None if r["suite"].endswith("-train") else TARGETS.get(r.get("kind"))
        if target is not None:
            ax.plot([100 * target] * 2, [i - 0.45, i + 0.45], color="black", linewidth=1.2)
        ax.text(values[i] + 0.5, i, f'{values[i]:.0f} % of {r.get("judged_limit", "copy")}', va="center",
                fontsize=6)
    ax.set_yticks(y)
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlim(0, max(110, max(values) + 25))
    ax.set_xlabel("% of the same-run limit (black tick: the target); blue 1 thread, orange 2 or more")
    isas = sorted({r.get("isa", "?") for r in rows})
    probes = sorted({(r["threads"], r.get("copy_nt_gbps", 0)) for r in rows})
    probe_text = ", ".join(f"{t} thr copy-nt {g:.1f} GB/s" for t, g in probes)
    ax.set_title(f"txops bench, ISA {'/'.join(isas)}: {probe_text}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)
    return len(rows)


def main(argv=None):
    """Command line: plot one JSON file of records."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("json", help="records written by txops bench --json")
    parser.add_argument("--out", help="PNG to write (default: the JSON's path with .png)")
    args = parser.parse_args(argv)
    out = args.out or os.path.splitext(args.json)[0] + ".png"
    n = plot(load(args.json), out)
    print(f"plot_bench.py: {n} bars -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
