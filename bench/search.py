#!/usr/bin/env python3
"""Search over all history (issue 35), measured on corpora made by gen_corpus.py.

plant CORPUS: adds rare words to a corpus (once; it records what it planted in
CORPUS/planted.json): each of 24 made-up words is appended, as a prompt, to 1 to 3
sessions, so a query for it has few hits and any scan must read every byte.

run --mimesis PATH --corpus DIR [--corpus DIR ...] [--runs N] [--before PATH]: for each corpus
- the first build: `mimesis search` on an empty data dir (wall, CPU, peak RSS), and the
  index's size against the corpus's;
- rare words: `mimesis search WORD --json` against `rg -l -F -i WORD` over the same
  files, alternating, whole process against whole process, medians and their ratio;
- every query of a mixed set (rare and common words, phrases, exclusions, kinds,
  projects, files), each run N times: median and p95;
- an appended record: from the append to the first search that finds it.
With --before PATH (another build of mimesis, with an index of its own), the mixed set is
run by both, alternating query by query, and both are reported (before -> after); nothing
else is measured.
The page cache is warmed first, so the programs are compared, not the disk.
"""
import argparse, json, os, random, shutil, statistics, subprocess, sys, tempfile, time

RARE = [f"{a}{b}" for a in ("zorblax", "quintel", "vexmora", "plinthar", "grumwald", "ostravik")
        for b in ("ion", "eth", "ura", "ock")]


# The mixed set of queries: rare and common words, phrases, exclusions, kinds, projects, files.
QUERIES = [[w] for w in RARE[:6]] + [
    ["cargo"], ["trailing", "commas"], ['"nested arrays without"'], ["cargo -test"],
    ["session", "--kind", "reply"], ["fix", "--kind", "tool_result", "--kind", "thinking"],
    ["parser", "--project", "project-007"], ["store", "--since", "2026-10-25"],
    ["--file", "store.rs"], ["--file", "src/lib.rs", "test"], ["refact*"], ["cargo", "--limit", "200"],
]


def sessions(corpus):
    out = []
    for root, _, files in os.walk(os.path.join(corpus, "projects")):
        out += [os.path.join(root, f) for f in files if f.endswith(".jsonl")]
    return sorted(out)


def record(sid, cwd, text, at):
    u = "%08x-0000-4000-8000-%012x" % (random.getrandbits(32), random.getrandbits(48))
    return json.dumps({"parentUuid": None, "isSidechain": False, "type": "user", "uuid": u,
                       "timestamp": at, "cwd": cwd, "sessionId": sid,
                       "message": {"role": "user", "content": text}})


def append(path, line):
    with open(path, "rb+") as f:
        f.seek(0, 2)
        if f.tell() > 0:
            f.seek(-1, 2)
            if f.read(1) != b"\n":
                f.write(b"\n")
        f.write(line.encode() + b"\n")


def plant(corpus):
    done = os.path.join(corpus, "planted.json")
    if os.path.exists(done):
        return json.load(open(done))
    rng = random.Random(35)
    random.seed(35)
    files = sessions(corpus)
    planted = {}
    for w in RARE:
        chosen = rng.sample(files, rng.randint(1, 3))
        for p in chosen:
            sid = os.path.basename(p)[:-6]
            append(p, record(sid, "/home/dev/src/planted", f"please look at the {w} handler again", "2026-11-20T00:00:00.000Z"))
        planted[w] = len(chosen)
    json.dump(planted, open(done, "w"))
    return planted


def warm(corpus):
    for p in sessions(corpus):
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass


def run(cmd, check=True):
    """Wall seconds, CPU seconds and peak RSS (MB) of one whole process, and its output."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    code = os.waitstatus_to_exitcode(status)
    if check and code != 0:
        sys.exit(f"{' '.join(cmd)} failed ({code}): {err.decode(errors='replace')}")
    return wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024, out


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        total += sum(os.path.getsize(os.path.join(root, f)) for f in files)
    return total


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plant")
    p.add_argument("corpus")
    r = sub.add_parser("run")
    r.add_argument("--mimesis", required=True)
    r.add_argument("--corpus", action="append", required=True)
    r.add_argument("--runs", type=int, default=7)
    r.add_argument("--before", help="another build of mimesis: the mixed queries alternate between the two")
    a = ap.parse_args()
    if a.cmd == "plant":
        print(json.dumps(plant(a.corpus)))
        return
    for corpus in a.corpus:
        planted = plant(corpus)
        warm(corpus)
        size = du(os.path.join(corpus, "projects"))
        n = len(sessions(corpus))
        print(f"\n## {os.path.basename(corpus.rstrip('/'))}: {n} sessions, {size / 1e6:.0f} MB")
        data = tempfile.mkdtemp(prefix="mimesis-search-bench-")
        base = [a.mimesis, "--config-dir", corpus, "--data-dir", data, "search"]
        wall, cpu, rss, _ = run(base + ["zorblaxion", "--json"])
        index = du(data)
        print(f"first build: {wall:.1f} s wall, {cpu:.1f} s CPU, {rss:.0f} MB peak RSS; "
              f"index {index / 1e6:.0f} MB = {100 * index / size:.1f} % of the corpus")
        if a.before:
            before_data = tempfile.mkdtemp(prefix="mimesis-search-bench-before-")
            before = [a.before, "--config-dir", corpus, "--data-dir", before_data, "search"]
            run(before + ["zorblaxion", "--json"])
            every = {"before": [], "after": []}
            per = {}
            for _ in range(a.runs):
                for q in QUERIES:
                    for name, cmd in (("before", before), ("after", base)):
                        w, _, _, _ = run(cmd + q + ["--json"])
                        every[name].append(w)
                        per.setdefault(" ".join(q), {}).setdefault(name, []).append(w)
            for name in ("before", "after"):
                v = every[name]
                print(f"{name}: all queries ({len(v)} runs of {len(QUERIES)}, alternating): median "
                      f"{statistics.median(v) * 1000:.1f} ms, p95 {pct(v, 0.95) * 1000:.1f} ms, max {max(v) * 1000:.1f} ms")
            for q, v in per.items():
                print(f"  {q:<45} median {statistics.median(v['before']) * 1000:6.1f} -> "
                      f"{statistics.median(v['after']) * 1000:6.1f} ms   max {max(v['before']) * 1000:6.1f} -> "
                      f"{max(v['after']) * 1000:6.1f} ms")
            shutil.rmtree(before_data, ignore_errors=True)
            shutil.rmtree(data, ignore_errors=True)
            continue
        # Rare words against ripgrep, alternating.
        ours, rg, ratios = [], [], []
        for i in range(a.runs):
            for w in RARE[: max(4, a.runs)]:
                w1, _, _, out = run(base + [w, "--json"])
                hits = json.loads(out)["total"]
                assert hits >= planted[w], (w, hits, planted[w])
                w2, _, _, _ = run(["rg", "-l", "-F", "-i", w, os.path.join(corpus, "projects")])
                ours.append(w1)
                rg.append(w2)
                ratios.append(w2 / w1)
        mo, mr = statistics.median(ours), statistics.median(rg)
        print(f"rare words ({len(ours)} runs): mimesis search median {mo * 1000:.1f} ms, "
              f"rg -l -F -i median {mr * 1000:.0f} ms: {mr / mo:.0f}x faster "
              f"(pairwise median {statistics.median(ratios):.0f}x)")
        # Every kind of query.
        queries = QUERIES
        times = {}
        for _ in range(a.runs):
            for q in queries:
                w, _, _, _ = run(base + q + ["--json"])
                times.setdefault(" ".join(q), []).append(w)
        every = [t for v in times.values() for t in v]
        print(f"all queries ({len(every)} runs of {len(queries)}): median {statistics.median(every) * 1000:.1f} ms, "
              f"p95 {pct(every, 0.95) * 1000:.1f} ms, max {max(every) * 1000:.1f} ms")
        for q, v in times.items():
            print(f"  {q:<45} median {statistics.median(v) * 1000:6.1f} ms  max {max(v) * 1000:6.1f} ms")
        # An appended record, searchable: from the append to the first search that finds it.
        lat = []
        files = sessions(corpus)
        for i in range(5):
            w = f"freshword{random.getrandbits(40):x}"
            path = random.choice(files)
            t0 = time.monotonic()
            append(path, record(os.path.basename(path)[:-6], "/x", w, "2026-11-21T00:00:00.000Z"))
            while True:
                _, _, _, out = run(base + [w, "--json"])
                if json.loads(out)["total"] > 0:
                    break
                if time.monotonic() - t0 > 10:
                    sys.exit("an appended record was not found within 10 s")
            lat.append(time.monotonic() - t0)
        print(f"appended record searchable after: median {statistics.median(lat) * 1000:.0f} ms, "
              f"max {max(lat) * 1000:.0f} ms")
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()
