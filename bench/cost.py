#!/usr/bin/env python3
"""`mimesis cost --by day --json` against ccusage's native binary (`daily --json --offline`)
on the same corpora: wall time (medians of alternating runs, A B A B …, so a noisy shared
machine affects both alike), CPU, peak RSS, and the ratio. Ours is run two ways: with an
empty data dir each time (no fleet database, no cost cache: it reads every transcript and
writes the cache), and with one data dir kept across the runs (its cost cache written
before the timing: the files are only stat'ed). The page cache is warmed
first, so the programs are compared, not the disk. Before timing, the per-day token totals
of both are compared (they must be equal) and so are the dollars.

Usage: cost.py --corpus DIR [--corpus DIR …] --mimesis PATH --ccusage PATH [--runs N]
"""
import argparse, json, os, shutil, statistics, subprocess, sys, tempfile, time

from index import warm  # bench/index.py: reads every file once (the page cache, not the disk)


def run(cmd, env, capture=False):
    """Wall seconds, CPU seconds (user + sys), peak RSS (MB) and stdout of one run."""
    t0 = time.monotonic()
    out = subprocess.PIPE if capture else subprocess.DEVNULL
    p = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.PIPE)
    data = p.stdout.read() if capture else b""
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    err = p.stderr.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {err}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, data


def ours(path, corpus, data=None):
    data = data or tempfile.mkdtemp(prefix="mimesis-bench-")
    env = dict(os.environ, MIMESIS_DATA_DIR=data, CLAUDE_CONFIG_DIR=corpus)
    return [path, "cost", "--by", "day", "--json"], env, data


def compare(mimesis, ccusage, corpus):
    """Per-day tokens of both must be equal; returns both totals in dollars."""
    cmd, env, data = ours(mimesis, corpus)
    b = json.loads(run(cmd, env, True)[3])
    shutil.rmtree(data, ignore_errors=True)
    a = json.loads(run([ccusage, "daily", "--json", "--offline"], dict(os.environ, CLAUDE_CONFIG_DIR=corpus), True)[3])
    days_a = {r["period"]: (r["inputTokens"], r["outputTokens"], r["cacheCreationTokens"], r["cacheReadTokens"])
              for r in a["daily"]}
    days_b = {r["key"]: (r["inputTokens"], r["outputTokens"], r["cacheCreationInputTokens"], r["cacheReadInputTokens"])
              for r in b["rows"]}
    if days_a != days_b:
        differ = sorted(k for k in set(days_a) | set(days_b) if days_a.get(k) != days_b.get(k))
        sys.exit(f"{corpus}: per-day tokens differ on {len(differ)} days, e.g. {differ[0]}: "
                 f"ccusage {days_a.get(differ[0])}, mimesis {days_b.get(differ[0])}")
    return len(days_a), sum(r["totalCost"] for r in a["daily"]), b["total"]["costUsd"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", action="append", required=True)
    ap.add_argument("--mimesis", required=True)
    ap.add_argument("--ccusage", required=True)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    print("| corpus | program | wall (median) | CPU | peak RSS | vs ccusage (wall) |")
    print("|---|---|---|---|---|---|")
    notes = []
    for corpus in a.corpus:
        size = warm(corpus)
        sessions = sum(1 for r, _, fs in os.walk(os.path.join(corpus, "projects")) for f in fs if f.endswith(".jsonl"))
        days, usd_cc, usd_ours = compare(a.mimesis, a.ccusage, corpus)
        results = {"mimesis, empty cache": [], "mimesis, warm cache": [], "ccusage": []}
        kept = tempfile.mkdtemp(prefix="mimesis-bench-warm-")
        cmd, env, _ = ours(a.mimesis, corpus, kept)
        warm_report = run(cmd, env, True)[3]
        for _ in range(a.runs):
            cmd, env, data = ours(a.mimesis, corpus)
            results["mimesis, empty cache"].append(run(cmd, env)[:3])
            shutil.rmtree(data, ignore_errors=True)
            cmd, env, _ = ours(a.mimesis, corpus, kept)
            results["mimesis, warm cache"].append(run(cmd, env)[:3])
            env = dict(os.environ, CLAUDE_CONFIG_DIR=corpus)
            results["ccusage"].append(run([a.ccusage, "daily", "--json", "--offline"], env)[:3])
        cmd, env, _ = ours(a.mimesis, corpus, kept)
        if run(cmd, env, True)[3] != warm_report:
            sys.exit(f"{corpus}: the report with a warm cost cache changed between runs")
        shutil.rmtree(kept, ignore_errors=True)
        name = f"{os.path.basename(corpus.rstrip('/'))} ({sessions} sessions, {size / 1e6:.0f} MB)"
        cc = statistics.median(w for w, _, _ in results["ccusage"])
        for label, rs in results.items():
            wall = statistics.median(w for w, _, _ in rs)
            cpu = statistics.median(c for _, c, _ in rs)
            rss = max(m for _, _, m in rs)
            ratio = f"{cc / wall:.2f}x faster" if label != "ccusage" else ""
            print(f"| {name} | {label} | {wall:.3f} s | {cpu:.3f} s | {rss:.0f} MB | {ratio} |")
        notes.append(f"{name}: per-day tokens equal on all {days} days; ccusage ${usd_cc:,.2f}, mimesis ${usd_ours:,.2f}")
        sys.stdout.flush()
    for n in notes:
        print(n)


if __name__ == "__main__":
    main()
