#!/usr/bin/python3
"""Peer comparison: Xapian's top-100 BM25 search over the corpus of a store
built by `h4r bench latency --api`, for the queries that run used.

Reads the items' text from the store's SQLite file (read-only), indexes them
with Xapian (BM25, the default weighting; an in-memory index unless --db is
given, which keeps it for reruns), then runs each query once as an OR query
of its words and asks for the top 100, timing the search and the reading of
the 100 document ids, one query at a time. Prints p50/p95/p99 in ms as JSON.

Needs Debian's python3-xapian (apt-get install python3-xapian) and runs with
the system Python:

    /usr/bin/python3 bench/xapian_peer.py --store bench-data/items-100000 \\
        --queries bench-out/queries-100000.txt
"""

import argparse
import json
import math
import os
import sqlite3
import sys
import time

import xapian


def percentile(sorted_ms, p):
    i = max(0, min(len(sorted_ms) - 1, math.ceil(p * len(sorted_ms)) - 1))
    return sorted_ms[i]


def build(store, dbpath):
    """Index every item of store's h4r.db; reuse dbpath if it is complete."""
    marker = dbpath and os.path.join(dbpath, "h4r-complete")
    if marker and os.path.exists(marker):
        return xapian.Database(dbpath), 0.0
    if dbpath:
        db = xapian.WritableDatabase(dbpath, xapian.DB_CREATE_OR_OVERWRITE)
    else:
        db = xapian.inmemory_open()
    src = sqlite3.connect("file:%s?mode=ro" % os.path.join(store, "h4r.db"), uri=True)
    tg = xapian.TermGenerator()
    t0 = time.perf_counter()
    n = 0
    for item_id, text in src.execute("SELECT id, text FROM items"):
        doc = xapian.Document()
        tg.set_document(doc)
        tg.index_text(text)
        doc.set_data(item_id)
        db.add_document(doc)
        n += 1
    db.commit()
    seconds = time.perf_counter() - t0
    src.close()
    if marker:
        db.close()
        with open(marker, "w") as f:
            f.write("%d\n" % n)
        db = xapian.Database(dbpath)
    return db, seconds


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", required=True, help="data folder of a store built by h4r bench latency --api (items-SIZE)")
    ap.add_argument("--queries", required=True, help="file of queries, one a line (queries-SIZE.txt of that run)")
    ap.add_argument("--db", default="", help="keep the Xapian index in this folder and reuse it (default: in memory)")
    ap.add_argument("--k", type=int, default=100, help="hits per query")
    args = ap.parse_args()

    db, build_s = build(args.store, args.db)
    with open(args.queries) as f:
        queries = [line.strip() for line in f if line.strip()]
    qp = xapian.QueryParser()
    qp.set_default_op(xapian.Query.OP_OR)
    enquire = xapian.Enquire(db)
    enquire.set_weighting_scheme(xapian.BM25Weight())
    # One untimed pass warms the page cache and Xapian's own caches, as the
    # h4r server is warmed by the requests before the measured ones.
    for q in queries[:20]:
        enquire.set_query(qp.parse_query(q))
        enquire.get_mset(0, args.k)
    ms = []
    hits = 0
    for q in queries:
        t0 = time.perf_counter()
        enquire.set_query(qp.parse_query(q))
        mset = enquire.get_mset(0, args.k)
        ids = [m.document.get_data() for m in mset]
        ms.append((time.perf_counter() - t0) * 1000)
        hits += len(ids)
    ms.sort()
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    json.dump({
        "peer": "xapian " + xapian.version_string(),
        "documents": db.get_doccount(),
        "buildSeconds": round(build_s, 1),
        "queries": len(ms),
        "meanHits": hits / max(1, len(ms)),
        "p50": round(percentile(ms, 0.50), 3),
        "p95": round(percentile(ms, 0.95), 3),
        "p99": round(percentile(ms, 0.99), 3),
        "loadAverage": load,
    }, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
