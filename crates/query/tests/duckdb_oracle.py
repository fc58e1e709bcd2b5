"""DuckDB side of the differential test (crates/query/tests/duckdb.rs).

Reads {"tables": {name: parquet path}, "queries": [sql, ...]} from argv[1]; writes, per
query, {"rows": [[value, ...], ...]} or {"error": text} as JSON to argv[2]."""
import json
import math
import sys

import duckdb

spec = json.load(open(sys.argv[1]))
con = duckdb.connect()
con.execute("SET threads TO 1")
for name, path in spec["tables"].items():
    con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{path}')")


def val(v):
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    if isinstance(v, bool):
        return int(v)
    return v


out = []
for q in spec["queries"]:
    try:
        rows = con.execute(q).fetchall()
        out.append({"rows": [[val(v) for v in r] for r in rows]})
    except Exception as e:  # noqa: BLE001 - reported to the Rust side as data
        out.append({"error": str(e)})
json.dump(out, open(sys.argv[2], "w"))
