//! Differential test against DuckDB: random tables (sizes 0, 1, 2, 7, a prime across
//! morsel boundaries, ...) written to Parquet, random queries of the supported subset
//! (filters, projections, every aggregate with one group / dense / hashed / text keys,
//! top-k, sorts on several keys with OFFSET and LIMIT, user-free built-ins), run by
//! Tessera (1 and 2 threads) and by DuckDB (`tests/duckdb_oracle.py`); results compared row
//! by row (in order where the query orders them completely, as multisets otherwise),
//! integers exactly and floats to a relative 1e-9.
//!
//! DuckDB comes from the Python environment `scripts/setup.sh` makes (`target/pyenv`), or
//! `TESSERA_PYTHON`. Without it the test fails (it never passes by skipping).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow::datatypes::{DataType, Float32Type, Float64Type, Int32Type, Int64Type};
use serde_json::{json, Value};
use tessera_query::Session;

mod common;
use common::Rng;

fn python() -> PathBuf {
    if let Ok(p) = std::env::var("TESSERA_PYTHON") {
        return PathBuf::from(p);
    }
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/pyenv/bin/python")
}

fn table(rng: &mut Rng, n: usize) -> RecordBatch {
    let words = ["alpha", "beta", "gamma", "delta", "eps"];
    let id: Vec<i64> = (0..n as i64).collect();
    let k: Vec<i32> = (0..n).map(|_| rng.below(20) as i32).collect();
    let x: Vec<i32> = (0..n).map(|_| rng.below(101) as i32 - 50).collect();
    let g: Vec<i64> = (0..n)
        .map(|_| (rng.below(3000) as i64 - 1500) * 1_000_003)
        .collect();
    let mut f = |s: f64| {
        (0..n)
            .map(|_| (rng.f() * 2.0 - 1.0) * s)
            .collect::<Vec<f64>>()
    };
    let (a, b, c) = (f(10.0), f(10.0), f(5.0));
    let s: Vec<&str> = (0..n).map(|_| words[rng.below(5) as usize]).collect();
    RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(id)) as ArrayRef),
        ("k", Arc::new(Int32Array::from(k)) as ArrayRef),
        ("x", Arc::new(Int32Array::from(x)) as ArrayRef),
        ("g", Arc::new(Int64Array::from(g)) as ArrayRef),
        ("a", Arc::new(Float64Array::from(a)) as ArrayRef),
        ("b", Arc::new(Float64Array::from(b)) as ArrayRef),
        ("c", Arc::new(Float64Array::from(c)) as ArrayRef),
        ("s", Arc::new(StringArray::from(s)) as ArrayRef),
    ])
    .unwrap()
}

fn cond(r: &mut Rng) -> String {
    let atoms = [
        "a > 0",
        "b < 1.5",
        "(a + 2 * b - c) > 0",
        "x >= 10",
        "k = 3",
        "x % 3 = 0",
        "a * x < 20",
        "id // 7 > 3",
        "NOT (c > 2)",
        "least(a, b) > -3",
        "abs(x) < 25",
    ];
    let n = 1 + r.below(3);
    let mut s = r.pick(&atoms).to_string();
    for _ in 1..n {
        let op = r.pick(&["AND", "OR"]);
        s = format!("({s}) {op} {}", r.pick(&atoms));
    }
    s
}

fn expr(r: &mut Rng) -> &'static str {
    r.pick(&[
        "a + b",
        "x * k",
        "a * 2.5 - c",
        "abs(x)",
        "sqrt(abs(a))",
        "least(a, b)",
        "greatest(x, k)",
        "CAST(x AS DOUBLE) / 4",
        "floor(a)",
        "x - k * 3",
        "exp(c / 10)",
    ])
}

fn query(r: &mut Rng, t: &str) -> (String, bool) {
    let w = |r: &mut Rng| {
        if r.below(4) == 0 {
            String::new()
        } else {
            format!(" WHERE {}", cond(r))
        }
    };
    match r.below(8) {
        7 => {
            // Top-k on an integer key with ties: only the key is selected, so any choice
            // among tied rows gives the same result.
            let c = r.pick(&["x", "g", "k", "x * k", "CAST(x AS FLOAT)"]);
            let dir = r.pick(&["", " DESC"]);
            // No LIMIT (or a large one): the whole column sorted, values alone.
            let l = r.pick(&[" LIMIT 1", " LIMIT 3", " LIMIT 50", " LIMIT 4096", "", " LIMIT 9000 OFFSET 7"]);
            (
                format!("SELECT {c} AS v FROM {t}{} ORDER BY v{dir}{l}", w(r)),
                true,
            )
        }
        0 => (format!("SELECT count(*) FROM {t}{}", w(r)), false),
        1 => (
            format!(
                "SELECT count(*), sum(x), sum(a), min(b), max(x), avg(c), min(k), max(a) FROM {t}{}",
                w(r)
            ),
            false,
        ),
        2 => {
            let keys = r.pick(&["k", "s", "g", "k, s", "x", "k % 4", "s, x"]);
            let e = expr(r);
            (
                format!(
                    "SELECT {keys}, count(*), sum({e}), min(a), max(x), avg(b) FROM {t}{} GROUP BY {keys}",
                    w(r)
                ),
                false,
            )
        }
        3 => (
            format!("SELECT id, {}, {}, s FROM {t}{}", expr(r), expr(r), w(r)),
            false,
        ),
        4 => {
            let dir = r.pick(&["", " DESC"]);
            let l = r.pick(&["1", "5", "37", "100"]);
            (
                format!(
                    "SELECT id, a, s, {} FROM {t}{} ORDER BY a{dir} LIMIT {l}",
                    expr(r),
                    w(r)
                ),
                true,
            )
        }
        5 => {
            let l = r.pick(&["10", "1000", "100000"]);
            let o = r.pick(&["0", "3", "50"]);
            (
                format!(
                    "SELECT id, x, {} AS e FROM {t}{} ORDER BY x, id DESC LIMIT {l} OFFSET {o}",
                    expr(r),
                    w(r)
                ),
                true,
            )
        }
        _ => (
            format!(
                "SELECT s, k, x, b FROM {t}{} ORDER BY s DESC, k, id",
                w(r)
            ),
            true,
        ),
    }
}

fn rows(b: &RecordBatch) -> Vec<Vec<Value>> {
    let n = b.num_rows();
    let mut out = vec![Vec::new(); n];
    for c in b.columns() {
        for (i, row) in out.iter_mut().enumerate() {
            row.push(cell(c.as_ref(), i));
        }
    }
    out
}

fn cell(c: &dyn Array, i: usize) -> Value {
    if c.is_null(i) {
        return Value::Null;
    }
    match c.data_type() {
        DataType::Int32 => json!(c.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => json!(c.as_primitive::<Int64Type>().value(i)),
        DataType::Float32 => json!(c.as_primitive::<Float32Type>().value(i) as f64),
        DataType::Float64 => json!(c.as_primitive::<Float64Type>().value(i)),
        DataType::Utf8 => json!(c.as_string::<i32>().value(i)),
        DataType::Boolean => json!(i64::from(c.as_boolean().value(i))),
        t => panic!("unexpected result type {t}"),
    }
}

fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                return x == y;
            }
            let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
            (x - y).abs() <= 1e-9 * x.abs().max(y.abs()) + 1e-9
        }
        _ => a == b,
    }
}

fn key(r: &[Value]) -> String {
    // Multiset order: floats rounded so that tiny differences sort alike.
    r.iter()
        .map(|v| match v {
            Value::Number(n) if n.as_i64().is_none() => format!("{:.6e}", n.as_f64().unwrap()),
            v => v.to_string(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

#[test]
fn random_queries_agree_with_duckdb() {
    let py = python();
    let ok = std::process::Command::new(&py)
        .args(["-c", "import duckdb"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    assert!(
        ok,
        "DuckDB is needed for this test: run `bash scripts/setup.sh` (it installs DuckDB into target/pyenv) or set TESSERA_PYTHON to a Python with the duckdb package (tried {})",
        py.display()
    );
    let dir = std::env::temp_dir().join(format!("tessera-duckdb-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let sizes = [0usize, 1, 2, 7, 1000, 65537, 150001];
    let mut sessions = [Session::new(), Session::new()];
    sessions[0].set_threads(1);
    sessions[1].set_threads(2);
    // Small morsels, so that every table but the smallest is cut into many (partial
    // results merged, heaps and hash tables per worker, growth mid-morsel).
    sessions[0].set_morsel_rows(4099);
    sessions[1].set_morsel_rows(1000);
    let mut tables = serde_json::Map::new();
    for &n in &sizes {
        let b = table(&mut rng, n);
        let name = format!("t{n}");
        let path = dir.join(format!("{name}.parquet"));
        tessera_query::write(&b, &path).unwrap();
        for s in &mut sessions {
            // Read back through the Parquet reader (as the CLI does).
            s.register_file(&name, &path).unwrap();
        }
        tables.insert(name, json!(path.display().to_string()));
    }
    let mut queries = Vec::new();
    for &n in &sizes {
        let count = if n < 1000 { 12 } else { 40 };
        for _ in 0..count {
            queries.push(query(&mut rng, &format!("t{n}")));
        }
    }
    let spec = dir.join("spec.json");
    let out = dir.join("out.json");
    let texts: Vec<&str> = queries.iter().map(|(q, _)| q.as_str()).collect();
    std::fs::write(
        &spec,
        json!({"tables": tables, "queries": texts}).to_string(),
    )
    .unwrap();
    let st = std::process::Command::new(&py)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/duckdb_oracle.py"))
        .arg(&spec)
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success(), "the DuckDB script failed");
    let expected: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let mut failures = Vec::new();
    for ((q, ordered), want) in queries.iter().zip(&expected) {
        let Some(want) = want.get("rows") else {
            failures.push(format!("{q}\n  DuckDB failed: {}", want["error"]));
            continue;
        };
        let want: Vec<Vec<Value>> = want
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_array().unwrap().clone())
            .collect();
        for (t, s) in sessions.iter().enumerate() {
            let got = match s.sql(q) {
                Ok(b) => rows(&b),
                Err(e) => {
                    failures.push(format!("{q}\n  Tessera ({} thread(s)) failed: {e}", t + 1));
                    continue;
                }
            };
            let (mut g, mut w) = (got.clone(), want.clone());
            if !ordered {
                g.sort_by_key(|r| key(r));
                w.sort_by_key(|r| key(r));
            }
            let equal = g.len() == w.len()
                && g.iter()
                    .zip(&w)
                    .all(|(a, b)| a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)));
            if !equal {
                let first = g.iter().zip(&w).position(|(a, b)| {
                    !(a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)))
                });
                failures.push(format!(
                    "{q}\n  {} thread(s): {} rows, DuckDB {}; first difference at row {:?}: {:?} vs {:?}",
                    t + 1,
                    g.len(),
                    w.len(),
                    first,
                    first.map(|i| &g[i]),
                    first.map(|i| &w[i]),
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} of {} queries differ from DuckDB:\n{}",
        failures.len(),
        queries.len(),
        failures.join("\n")
    );
}
