#!/usr/bin/env python3
"""Where a running process's resident memory is: per mapping, and for its own executable's
code, per Rust crate.

    scripts/rss-breakdown.py PID [--top 25]

Reads /proc/PID/smaps for the mapping totals and /proc/PID/pagemap for which pages of the
executable's code are present; each present 4 KiB page is split among the functions it
holds (by `nm --size-sort`), and functions are grouped by the crate their path starts with.
Needs to run as root or as the process's owner; `nm` from binutils.
"""
import argparse
import collections
import os
import re
import struct
import subprocess
import sys

PAGE = os.sysconf("SC_PAGE_SIZE")


def mappings(pid):
    """(start, end, perms, offset, path, rss_kib) for every mapping."""
    rows, current = [], None
    with open(f"/proc/{pid}/smaps") as smaps:
        for line in smaps:
            head = re.match(r"^([0-9a-f]+)-([0-9a-f]+) (\S+) ([0-9a-f]+) \S+ \S+\s*(.*)$", line)
            if head:
                current = [int(head[1], 16), int(head[2], 16), head[3], int(head[4], 16),
                           head[5].strip(), 0]
                rows.append(current)
            elif line.startswith("Rss:") and current is not None:
                current[5] = int(line.split()[1])
    return rows


def present_pages(pid, start, end):
    """Indexes (from `start`) of the pages of [start, end) present in memory."""
    present = []
    with open(f"/proc/{pid}/pagemap", "rb") as pagemap:
        pagemap.seek(start // PAGE * 8)
        data = pagemap.read((end - start) // PAGE * 8)
    for index in range(len(data) // 8):
        (entry,) = struct.unpack_from("<Q", data, index * 8)
        if entry >> 63 & 1:
            present.append(index)
    return present


def crate_of(name):
    name = name.lstrip("<&*").replace("dyn ", "").replace("mut ", "")
    match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)::", name)
    if match:
        return match[1]
    return "(C code and others)"


def text_load_bias(binary):
    """vaddr - file offset of the executable's code segment."""
    out = subprocess.run(["readelf", "-lW", binary], capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        fields = line.split()
        if fields[:1] == ["LOAD"] and "E" in fields[-2:-1][0]:
            return int(fields[2], 16) - int(fields[1], 16)
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    exe = os.readlink(f"/proc/{args.pid}/exe")
    rows = mappings(args.pid)
    total = sum(row[5] for row in rows)
    by_kind = collections.Counter()
    for start, end, perms, offset, path, rss in rows:
        if path == exe:
            kind = f"{os.path.basename(exe)} {'code' if 'x' in perms else 'data (' + perms + ')'}"
        elif path.startswith("/"):
            kind = os.path.basename(path)
        else:
            kind = path or "anonymous (heap arenas, thread stacks)"
        by_kind[kind] += rss
    print(f"RSS {total / 1024:.1f} MiB")
    for kind, kib in by_kind.most_common():
        if kib:
            print(f"  {kib / 1024:6.2f} MiB  {kind}")

    code = next((r for r in rows if r[4] == exe and "x" in r[2]), None)
    if code is None:
        return
    start, end, _, offset, _, _ = code
    bias = text_load_bias(exe)
    symbols = []
    nm = subprocess.run(["nm", "--size-sort", "-S", "-C", exe], capture_output=True, text=True)
    for line in nm.stdout.splitlines():
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[2] in "tTwW":
            symbols.append((int(parts[0], 16), int(parts[1], 16), parts[3]))
    symbols.sort()
    if not symbols:
        print(f"\n(no symbols in {exe}: stripped, or `nm` missing; no per-crate figures)")
        return
    addresses = [s[0] for s in symbols]
    import bisect
    resident = collections.Counter()
    sizes = collections.Counter()
    for address, size, name in symbols:
        sizes[crate_of(name)] += size
    pages = present_pages(args.pid, start, end)
    for index in pages:
        page_start = offset + index * PAGE + bias
        page_end = page_start + PAGE
        at = max(bisect.bisect_right(addresses, page_start) - 1, 0)
        while at < len(symbols) and symbols[at][0] < page_end:
            address, size, name = symbols[at]
            overlap = min(page_end, address + size) - max(page_start, address)
            if overlap > 0:
                resident[crate_of(name)] += overlap
            at += 1
    print(f"\nresident code by crate ({len(pages) * PAGE / 2**20:.1f} MiB of "
          f"{(end - start) / 2**20:.1f} MiB mapped): resident / in the binary")
    for crate, amount in resident.most_common(args.top):
        print(f"  {amount / 2**20:6.2f} / {sizes[crate] / 2**20:5.2f} MiB  {crate}")


if __name__ == "__main__":
    sys.exit(main())
