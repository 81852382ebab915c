"""How `eval` results are shown: a plain-text table and a PNG plot (metric vs iteration)."""

from __future__ import annotations

from pathlib import Path

COLUMNS = (  # (summary key, header)
    ("em", "EM"),
    ("f1", "F1"),
    ("acc", "Acc"),
    ("acc_judge", "Acc†"),
    ("answer_recall", "AnsRec"),
    ("gold_recall", "GoldRec"),
    ("evidence_recall", "EvRec"),
    ("stated", "stated"),
    ("looped", "looped"),
    ("llm_calls", "calls"),
    ("seconds", "s/q"),
)
PLOTTED = ("em", "f1", "acc", "acc_judge", "answer_recall", "gold_recall")


def _cell(value) -> str:
    return "-" if value is None else f"{value:.3f}"


def _signed(difference: dict) -> str:
    interval = "" if difference["ci95"] is None else f" ±{difference['ci95']:.3f}"
    return f"{difference['mean']:+.3f}{interval}"


def format_table(summary: dict, *, draft_source: str = "model") -> str:
    lines = [f"{summary['dataset']}  n={summary['n']}"]
    adaptive = summary["adaptive"]
    if summary["iterations"] or adaptive:  # adaptive alone: eval --adaptive-only
        lines[0] += f"  draft source: {draft_source}"
        lines.append("T".ljust(10) + "".join(h.rjust(9) for _, h in COLUMNS))
        for row in summary["iterations"]:
            lines.append(str(row["t"]).ljust(10) + "".join(_cell(row[k]).rjust(9) for k, _ in COLUMNS))
        if adaptive:
            label = f"adapt {adaptive['iterations']:.2f}"
            lines.append(label.ljust(10) + "".join(_cell(adaptive[k]).rjust(9) for k, _ in COLUMNS))
            reasons = ", ".join(f"{k} {v}" for k, v in sorted(adaptive["stop_reasons"].items()))
            lines.append(f"adaptive stops: {reasons}")
        headers = dict(COLUMNS)
        for name, metrics in summary.get("differences", {}).items():
            cells = "  ".join(f"{headers[m]} {_signed(d)}" for m, d in metrics.items())
            lines.append(f"{name}: {cells}")
    retrieval = summary["retrieval"]
    if retrieval:
        lines.append("retrieval with the question alone: " + "  ".join(f"{k} {v:.3f}" for k, v in retrieval.items()))
    compared = summary.get("retrieval_settings")  # Each retrieval setting, paired with dense
    if compared:
        for name, found in compared["settings"].items():
            lines.append(f"  {name}: " + "  ".join(f"{k} {v:.3f}" for k, v in found.items()))
        for name, differences in compared["differences"].items():
            lines.append(f"  {name}: " + "  ".join(f"{k} {_signed(d)}" for k, d in differences.items()))
    return "\n".join(lines)


def plot(summary: dict, path: Path) -> None:
    """One line per metric over t (the adaptive run as a star at its mean iterations);
    retrieval-only sets plot recall@k over k instead."""
    import matplotlib

    matplotlib.use("Agg")  # files only: no display on a terminal machine
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    rows = summary["iterations"]
    if rows:
        for key in PLOTTED:
            if rows[0][key] is None:
                continue
            (line,) = ax.plot([r["t"] for r in rows], [r[key] for r in rows], marker="o", label=key)
            if summary["adaptive"]:
                ax.plot(
                    summary["adaptive"]["iterations"],
                    summary["adaptive"][key],
                    marker="*",
                    markersize=12,
                    color=line.get_color(),
                    linestyle="none",
                )
        ax.set_xlabel("iteration t")
        ax.set_xticks([r["t"] for r in rows])
    else:
        recalls = {int(k.split("@")[1]): v for k, v in summary["retrieval"].items() if k.startswith("recall@")}
        ax.plot(list(recalls), list(recalls.values()), marker="o", label="recall@k")
        ax.plot([10], [summary["retrieval"]["ndcg@10"]], marker="s", linestyle="none", label="nDCG@10")
        ax.set_xscale("log")
        ax.set_xlabel("k")
    ax.set_ylim(0, 1)
    ax.set_title(f"{summary['dataset']} (n={summary['n']})")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
