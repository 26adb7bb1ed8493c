#!/usr/bin/env python3
"""The independent oracle for toolgate's canonical(): Python's unicodedata and str.casefold().

Protocol (JSON lines over stdin/stdout, one process for a whole run):
  1. The first line written is a greeting: {"unicode": "<unidata_version>", "python": "<version>",
     "assigned": [[first, last], ...]}: the ranges of code points Python's Unicode database assigns
     (general category other than Cn), so the caller can restrict its inputs to code points both
     sides know.
  2. The first line read is {"whiteSpace": "<every White_Space character>"}: the exact set to trim.
     Python's str.strip() with no argument strips a different set (it includes U+001C..U+001F,
     which are not White_Space), so the caller's set is passed to strip() explicitly.
  3. Every further line read is a JSON array of strings; the answer is one line, a JSON array of
     their canonical forms in the same order. An empty array ends the session.

canonical(s) = NFKC(casefold(strip_White_Space(NFKC(s))))
"""
import json
import sys
import unicodedata


def assigned_ranges():
    ranges = []
    start = None
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) != "Cn":
            if start is None:
                start = cp
        elif start is not None:
            ranges.append([start, cp - 1])
            start = None
    if start is not None:
        ranges.append([start, 0x10FFFF])
    return ranges


def main():
    out = sys.stdout
    greeting = {"unicode": unicodedata.unidata_version, "python": sys.version.split()[0], "assigned": assigned_ranges()}
    out.write(json.dumps(greeting) + "\n")
    out.flush()
    config = json.loads(sys.stdin.readline())
    white_space = config["whiteSpace"]
    nfkc = unicodedata.normalize
    for line in sys.stdin:
        batch = json.loads(line)
        if not batch:
            break
        forms = [nfkc("NFKC", nfkc("NFKC", s).strip(white_space).casefold()) for s in batch]
        out.write(json.dumps(forms) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
