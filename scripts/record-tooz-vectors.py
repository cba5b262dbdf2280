#!/usr/bin/python3
"""Records test/fixtures/tooz/wraparound.json from Debian's python3-tooz (tooz.hashring.HashRing).

    /usr/bin/python3 scripts/record-tooz-vectors.py > test/fixtures/tooz/wraparound.json

Why a second fixture: in hashring.json only 19 of 1,600 lookups hash past the ring's last point,
and in each the first and last points belong to the same host, so a ring that sent those keys to
the last point instead of wrapping to the first passed every test (issue #21). Every case here is
built so that the first and last points belong to DIFFERENT hosts, and most of its lookups are
keys that hash past the last point (`pastLast`), with replicas and ignored hosts that make the
walk cross the end of the ring. One case has non-ASCII host names and keys, chosen so that
hashing Latin-1 instead of UTF-8 bytes would move them.

Deterministic: no randomness, no clock; rerunning with the same tooz gives the same file. The
placements are tooz's own (`get_nodes`); this script only chooses host sets and keys.
"""
import bisect
import hashlib
import json
import sys

import tooz
import tooz.hashring

# Debian's python3-tooz leaves tooz.__version__ unset; the package version is what pins placements.
try:
    from importlib.metadata import version as _dist_version

    TOOZ_VERSION = _dist_version("tooz")
except Exception:  # pragma: no cover - metadata missing
    TOOZ_VERSION = "unknown"


def ring_of(hosts, partitions):
    ring = tooz.hashring.HashRing([], partitions=partitions)
    for name, weight in hosts:
        ring.add_node(name, weight=weight)
    return ring


def position(ring, key):
    """Where tooz's bisect puts `key`: len(ring._partitions) means past the last point."""
    hashed = int(hashlib.md5(key.encode("utf-8")).hexdigest(), 16)
    return bisect.bisect(ring._partitions, hashed)


def ends(ring):
    return ring._ring[ring._partitions[0]], ring._ring[ring._partitions[-1]]


def key_stream(prefix):
    """UUID-shaped keys (what Ironic hashes: node UUIDs), derived from a counter."""
    i = 0
    while True:
        h = hashlib.sha256(("%s-%d" % (prefix, i)).encode("utf-8")).hexdigest()
        yield "%s-%s-4%s-8%s-%s" % (h[0:8], h[8:12], h[13:16], h[17:20], h[20:32])
        i += 1


def lookup(ring, key, replicas, ignore):
    result = ring.get_nodes(key.encode("utf-8"), ignore_nodes=ignore, replicas=replicas)
    return {
        "key": key,
        "replicas": replicas,
        "ignore": sorted(ignore),
        "result": sorted(result),
        "pastLast": position(ring, key) == len(ring._partitions),
    }


def make_case(label, names, weights, exponent, keys, past_last=40, others=10):
    """A ring whose first and last points have different owners, and lookups mostly past its end."""
    partitions = 2**exponent
    # Rename (append a salt) until the first and last points belong to different hosts.
    salt = 0
    while True:
        suffix = "" if salt == 0 else "-%d" % salt
        hosts = [(n + suffix, w) for n, w in zip(names, weights)]
        ring = ring_of(hosts, partitions)
        first, last = ends(ring)
        if first != last:
            break
        salt += 1
    host_names = [h for h, _ in hosts]
    wrapping, inside = [], []
    for key in keys(label):
        if len(wrapping) >= past_last and len(inside) >= others:
            break
        if position(ring, key) == len(ring._partitions):
            if len(wrapping) < past_last:
                wrapping.append(key)
        elif len(inside) < others:
            inside.append(key)
    lookups = []
    for i, key in enumerate(wrapping + inside):
        # Vary the walk: one owner, several replicas, and ignoring the first point's owner (the
        # walk then has to go on past it) or the last point's.
        replicas = 1 + i % len(hosts) if i % 4 != 3 else len(hosts) + 1
        ignore = []
        if i % 5 == 2 and len(hosts) > 1:
            ignore = [first]
        elif i % 5 == 4 and len(hosts) > 2:
            ignore = [last, host_names[i % len(hosts)]] if host_names[i % len(hosts)] != last else [last]
        lookups.append(lookup(ring, key, replicas, ignore))
    return {
        "label": label,
        "hosts": [{"name": n, "weight": w} for n, w in hosts],
        "partitions": partitions,
        "hash": "md5",
        "points": len(ring._partitions),
        "firstOwner": first,
        "lastOwner": last,
        "lookups": lookups,
    }


def unicode_keys(label):
    words = ["ключ", "nœud", "ノード", "clé", "😀", "ünïcode", "Straße", "κόμβος"]
    i = 0
    while True:
        yield "%s-%d" % (words[i % len(words)], i)
        i += 1


def main():
    cases = [
        make_case("two hosts, one point each", ["c1", "c2"], [1, 1], 0, key_stream),
        make_case("two hosts, 2 points", ["left", "right"], [1, 1], 1, key_stream),
        make_case("three hosts, 4 points", ["conductor-a", "conductor-b", "conductor-c"], [1, 1, 1], 2, key_stream),
        make_case("weights 1-3, 8 points", ["w1", "w2", "w3"], [1, 2, 3], 3, key_stream),
        make_case("five hosts, 32 points (Ironic's default)", ["host-%d" % i for i in range(5)], [1] * 5, 5, key_stream),
        make_case("four weighted hosts, 64 points", ["r1", "r2", "r3", "r4"], [2, 1, 3, 1], 6, key_stream),
        make_case("ten hosts, 256 points", ["cond%02d.example.org" % i for i in range(10)], [1] * 10, 8, key_stream, 25, 5),
        make_case(
            "non-ASCII hosts and keys",
            ["ünïcode-host", "узел-1", "节点", "😀-host", "plain"],
            [1, 1, 2, 1, 1],
            2,
            unicode_keys,
        ),
    ]
    doc = {
        "source": "tooz.hashring.HashRing from Debian python3-tooz %s (the ring OpenStack Ironic builds conductors' node ownership on)"
        % TOOZ_VERSION,
        "recordedBy": "scripts/record-tooz-vectors.py",
        "command": "/usr/bin/python3 scripts/record-tooz-vectors.py > test/fixtures/tooz/wraparound.json",
        "note": "Every case has different hosts at its first and last points; pastLast marks keys that hash past the last point (tooz wraps them to the first).",
        "cases": cases,
    }
    json.dump(doc, sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
