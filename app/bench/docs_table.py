"""`speclens bench --docs`: the run's summary table into docs/benchmark.md, the whole run into docs/bench-runs/.

docs/benchmark.md keeps one current table per machine class, each between two markers:

    <!-- bench:begin amd-no-amx -->
    ...
    <!-- bench:end amd-no-amx -->

The class is the CPU's vendor and whether it has AMX tiles (read from /proc/cpuinfo's flags), because
those decide which kernels win (docs/cpu-path.md). A run replaces its own class's block and nothing else,
and writes the full report as a new dated file beside the page (bench-runs/YYYY-MM-DD-CLASS-bench.md).
A page without its class's markers is refused before anything is measured or written.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path

from .report import _f, markdown

DEFAULT_DOC = "docs/benchmark.md"
RUNS_DIR = "bench-runs"
VENDORS = {"GenuineIntel": "intel", "AuthenticAMD": "amd"}
LABELS = {"intel": "Intel", "amd": "AMD", "arm": "Arm", "other": "other CPU"}


class DocsError(ValueError):
    """The page cannot take this run's table (markers missing, doubled or out of order)."""


@dataclass(frozen=True)
class MachineClass:
    slug: str  # "amd-no-amx", "intel-amx", ...: the markers' name
    label: str  # "AMD, no AMX"
    cpu: str  # the model name, for the table's header line


def machine_class(cpuinfo: str | None = None) -> MachineClass:
    """Vendor + AMX from /proc/cpuinfo (its text may be given, for tests and other machines)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
        except OSError:
            cpuinfo = ""
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip() not in fields:
            fields[key.strip()] = value.strip()
    vendor_id = fields.get("vendor_id", "")
    model = fields.get("model name") or fields.get("Model") or fields.get("Hardware") or "unknown CPU"
    vendor = VENDORS.get(vendor_id)
    if vendor is None:
        lower = model.lower()
        vendor = ("intel" if "intel" in lower else "amd" if "amd" in lower
                  else "arm" if "CPU implementer" in fields or "arm" in lower else "other")
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    amx = "amx_tile" in flags
    slug = f"{vendor}-{'amx' if amx else 'no-amx'}"
    return MachineClass(slug, f"{LABELS[vendor]}, {'AMX' if amx else 'no AMX'}", model)


def markers(slug: str) -> tuple[str, str]:
    return f"<!-- bench:begin {slug} -->", f"<!-- bench:end {slug} -->"


def check_page(doc: Path, slug: str) -> str:
    """The page's text, once it is known to hold exactly one begin and one end marker of this class, in order."""
    if not doc.is_file():
        raise DocsError(f"--docs: {doc} is not a file (run from the repository root, or name docs/benchmark.md)")
    text = doc.read_text(encoding="utf-8")
    begin, end = markers(slug)
    nb, ne = text.count(begin), text.count(end)
    if nb != 1 or ne != 1 or text.index(begin) > text.index(end):
        found = sorted(set(re.findall(r"<!-- bench:begin (\S+) -->", text)))
        raise DocsError(
            f"--docs: {doc} needs exactly one '{begin}' followed by one '{end}' for this machine's class "
            f"({slug}); found {nb} begin and {ne} end marker(s). Classes on the page: {', '.join(found) or 'none'}. "
            "Add the two lines where this class's table belongs, then run again.")
    return text


def _gamma(row: dict, gamma: int | None) -> str:
    mode = row.get("mode")
    if mode == "target-only":
        return "–"
    if mode == "assisted (HF defaults)":
        return "HF's (20, heuristic)"
    if mode == "auto":
        counts = row.get("gammas") or {}
        used = sorted(int(g) for g, n in counts.items() if n)
        return "auto" + (f" ({used[0]}–{used[-1]})" if len(used) > 1 else f" ({used[0]})" if used else "")
    if row.get("gamma") is not None and row.get("mean_drafted") is not None:  # llama.cpp's: a cap, not a length
        return f"≤{row['gamma']}, {row['mean_drafted']:.1f} drafted"
    return "–" if gamma is None else str(gamma)


def _tokens_a_round(row: dict) -> str:
    rounds, tokens = row.get("rounds"), row.get("new_tokens")
    return f"{tokens / rounds:.2f}" if rounds and tokens else "–"


def summary_table(result: dict) -> list[str]:
    """One row per setting and configuration: what docs/benchmark.md explains column by column."""
    head = "| setting | configuration | tok/s median | min–max | × target-only | ÷ best HF | α | tokens a round | γ | c | peak MiB |"
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for summary in result["settings"]:
        gamma = (summary.get("params") or {}).get("gamma", result["meta"].get("gamma"))
        for row in summary["configs"]:
            tps = row["tokens_per_second"]
            lines.append(
                f"| {summary['setting']} | {row['config']} | {tps['median']:.1f} | {tps['min']:.1f}–{tps['max']:.1f} "
                f"| {_f(row.get('speedup'), '.2f', '×')} | {_f(row.get('ratio_to_best_hf'), '.2f', '×')} "
                f"| {_f(row.get('alpha'), '.3f')} | {_tokens_a_round(row)} | {_gamma(row, gamma)} "
                f"| {_f(row.get('c'))} | {_f(row.get('peak_memory_mib'), '.0f')} |")
    return lines


def _step_line(result: dict) -> list[str]:
    cpu = result.get("cpu") or {}
    kernels = result["meta"].get("target_kernels")
    row = (cpu.get("rows") or {}).get(kernels)
    if not row:
        return []
    v = row["v"]
    picked = ", ".join(f"v({n}) {v[n - 1]:.2f}" for n in (2, 5, 9, 17) if n <= len(v))
    return ["", f"One target step {row['step_ms']:.1f} ms on {kernels} ({row['over_floor']:.2f}× bytes ÷ triad, "
                f"triad {cpu['triad_gbps']:.1f} GB/s); {picked}."]


def block(result: dict, machine: MachineClass, when: _dt.date, command: str, run_file: str) -> str:
    """What goes between the class's markers: the header line, the table, the step line."""
    meta = result["meta"]
    load = (meta.get("load_average") or {})
    load_text = (f", 1-min load {load['before'][0]:.1f} → {load['after'][0]:.1f}" if load.get("before") else "")
    header = (f"**{when.isoformat()}** · {machine.label}: {machine.cpu} · {meta['threads']} threads, "
              f"target kernels {meta.get('target_kernels', '?')}, suite `{meta['prompts']}`, "
              f"{meta['repeats']} repeats{load_text} · `{command}` · full run: [{run_file}]({RUNS_DIR}/{run_file})")
    return "\n".join([header, "", *summary_table(result), *_step_line(result)])


def _run_path(runs: Path, when: _dt.date, slug: str) -> Path:
    path = runs / f"{when.isoformat()}-{slug}-bench.md"
    n = 2
    while path.exists():
        path = runs / f"{when.isoformat()}-{slug}-bench-{n}.md"
        n += 1
    return path


def update(result: dict, doc: Path, command: str, *, machine: MachineClass | None = None,
           when: _dt.date | None = None) -> Path:
    """Replace this class's table on the page and write the whole run as a new dated file; its path.
    Nothing is written when the page lacks the class's markers."""
    machine = machine or machine_class()
    when = when or _dt.datetime.now(_dt.UTC).date()
    text = check_page(doc, machine.slug)
    runs = doc.parent / RUNS_DIR
    path = _run_path(runs, when, machine.slug)
    body = "\n".join("#" + line if line.startswith("#") else line for line in markdown(result).splitlines())
    head = (f"# `speclens bench`, {when.isoformat()}, {machine.label}\n\n"
            f"> {when.isoformat()} · {machine.label}: {machine.cpu} · command: `{command}` · written by "
            "`speclens bench --docs`.\n")
    begin, end = markers(machine.slug)
    start, stop = text.index(begin) + len(begin), text.index(end)
    new = text[:start] + "\n" + block(result, machine, when, command, path.name) + "\n" + text[stop:]
    runs.mkdir(parents=True, exist_ok=True)
    path.write_text(head + "\n" + body.lstrip("\n") + "\n", encoding="utf-8")
    doc.write_text(new, encoding="utf-8")
    return path
