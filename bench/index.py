#!/usr/bin/env python3
"""Cold index time, side by side: `mimesis ls --json --all` (one or more builds) against
ccusage's native binary (`session --offline --json`), on one or more corpora.

Runs alternate (A B C A B C …) so a noisy, shared machine affects every program alike;
medians are reported. Each run of ours starts from an empty data dir (a cold index). The
page cache is warmed first, so the programs are compared, not the disk.

Usage: index.py --corpus DIR [--corpus DIR …] --mimesis LABEL=PATH [--mimesis …]
                [--ccusage PATH] [--runs N]
"""
import argparse, os, resource, shutil, statistics, subprocess, sys, tempfile, time


def warm(corpus):
    total = 0
    for root, _, files in os.walk(corpus):
        for f in files:
            with open(os.path.join(root, f), "rb") as fh:
                while chunk := fh.read(1 << 20):
                    total += len(chunk)
    return total


def run(cmd, env):
    """Wall seconds, CPU seconds (user + sys) and peak RSS (MB) of one run."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--mimesis", action="append", required=True, help="LABEL=PATH")
    ap.add_argument("--ccusage")
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    programs = [m.split("=", 1) for m in a.mimesis]
    print("| corpus | program | wall (median) | CPU | peak RSS | vs ccusage (wall) |")
    print("|---|---|---|---|---|---|")
    for corpus in a.corpus:
        size = warm(corpus)
        sessions = sum(1 for r, _, fs in os.walk(os.path.join(corpus, "projects")) for f in fs if f.endswith(".jsonl"))
        results = {label: [] for label, _ in programs}
        if a.ccusage:
            results["ccusage"] = []
        for _ in range(a.runs):
            for label, path in programs:
                data = tempfile.mkdtemp(prefix="mimesis-bench-")
                env = dict(os.environ, MIMESIS_DATA_DIR=data, CLAUDE_CONFIG_DIR=corpus)
                results[label].append(run([path, "ls", "--json", "--all"], env))
                shutil.rmtree(data, ignore_errors=True)
            if a.ccusage:
                env = dict(os.environ, CLAUDE_CONFIG_DIR=corpus)
                results["ccusage"].append(run([a.ccusage, "session", "--offline", "--json"], env))
        name = f"{os.path.basename(corpus.rstrip('/'))} ({sessions} sessions, {size / 1e6:.0f} MB)"
        cc = statistics.median(w for w, _, _ in results["ccusage"]) if a.ccusage else None
        for label, rs in results.items():
            wall = statistics.median(w for w, _, _ in rs)
            cpu = statistics.median(c for _, c, _ in rs)
            rss = max(m for _, _, m in rs)
            ratio = f"{cc / wall:.2f}x faster" if cc and label != "ccusage" else ""
            print(f"| {name} | {label} | {wall:.3f} s | {cpu:.3f} s | {rss:.0f} MB | {ratio} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
