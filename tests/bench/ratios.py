#!/usr/bin/env python3
"""ratios.py - the table of a benchmark run by interleave.py: runs, medians,
minima and the ratio of each variant's median to its baseline's.

usage: ratios.py OUT.json REPORT.md --title T --header H [--note N]
                 VARIANT:BASELINE...

Prints the report and writes it to REPORT.md. Variants missing from
OUT.json are left out. Exit status 1 when a variant failed or has no
successful run (the caller's benchmark failed), else 0.
"""
import argparse
import json
import statistics


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("json")
    ap.add_argument("md")
    ap.add_argument("--title", required=True)
    ap.add_argument("--header", required=True)
    ap.add_argument("--note", default="")
    ap.add_argument("pairs", nargs="+")
    a = ap.parse_args()
    d = json.load(open(a.json))["variants"]
    med = {n: statistics.median(v["times"]) for n, v in d.items() if v["times"]}
    md = ["# Benchmark: " + a.title, "", a.header, "",
          "| variant | runs ok / failed | median s | min s | / baseline |",
          "|---|---|---|---|---|"]
    for pair in a.pairs:
        n, base = pair.split(":", 1)
        if n not in d:
            continue
        v, m, b = d[n], med.get(n), med.get(base)
        md.append("| %s | %d / %d | %s | %s | %s |" % (
            n, len(v["times"]), v["fail"], "%.3f" % m if m else "-",
            "%.3f" % min(v["times"]) if v["times"] else "-",
            "%.2f (%s)" % (m / b, base) if m and b else "-"))
    if a.note:
        md += ["", a.note]
    bad = [n for n, v in d.items() if not v["times"] or v["fail"]]
    for n in bad:
        md += ["", "**%s failed** %d times: %s" % (
            n, d[n]["fail"], (d[n]["errors"] or [""])[0][:300])]
    text = "\n".join(md) + "\n"
    open(a.md, "w").write(text)
    print(text)
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
