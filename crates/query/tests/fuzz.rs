//! Mutated queries never panic: every one gives a result or an error value.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray};
use tessera_query::Session;

mod common;
use common::Rng;

const SEEDS: [&str; 12] = [
    "SELECT count(*) FROM t WHERE (a + 2 * b - c) > 0",
    "SELECT k, count(*), sum(x), min(a), max(x), avg(b) FROM t WHERE a > 0 GROUP BY k",
    "SELECT s, x, sum(a) FROM t GROUP BY s, x ORDER BY s DESC, x LIMIT 5 OFFSET 1",
    "SELECT id, a * 2.5 - c AS e, s FROM t WHERE NOT (c > 2) OR x % 3 = 0 ORDER BY e DESC LIMIT 7",
    "SELECT id, f(a, x) FROM t WHERE g(x) ORDER BY id",
    "SELECT x FROM t ORDER BY x DESC",
    "SELECT id // (x + 50), abs(x), sqrt(abs(a)), least(a, b), greatest(x, k) FROM t",
    "SELECT CAST(x AS DOUBLE) / 4, floor(a), ceil(b), power(a, 2), exp(c), ln(abs(a) + 1) FROM t",
    "SELECT k % 4, count(*) FROM t GROUP BY k % 4 ORDER BY 1",
    "SELECT * FROM t WHERE id < 3",
    "SELECT a FROM t ORDER BY a LIMIT 0",
    "SELECT sum(f(a, k)) AS s FROM t WHERE a > -1 AND b < 1",
];

const TOKENS: [&str; 40] = [
    "SELECT",
    "FROM",
    "WHERE",
    "GROUP BY",
    "ORDER BY",
    "LIMIT",
    "OFFSET",
    "AND",
    "OR",
    "NOT",
    "(",
    ")",
    ",",
    "*",
    "+",
    "-",
    "/",
    "//",
    "%",
    "=",
    "<>",
    "<",
    ">=",
    "a",
    "x",
    "s",
    "id",
    "count(*)",
    "sum(",
    "f(",
    "g(",
    "CAST(",
    "AS",
    "DOUBLE",
    "0",
    "-1",
    "1e308",
    "9223372036854775807",
    "'txt'",
    "NULL",
];

/// Words replaced by others of their class (the query mostly stays well-formed).
const CLASSES: [&[&str]; 4] = [
    &["a", "b", "c", "x", "k", "id", "s"],
    &[
        "0",
        "1",
        "-1",
        "2.5",
        "3",
        "1e308",
        "9223372036854775807",
        "2147483647",
    ],
    &["+", "-", "*", "/", "//", "%"],
    &["=", "<>", "<", ">=", ">", "AND", "OR"],
];

#[test]
fn mutated_queries_never_panic() {
    let n = 300;
    let b = RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..n)) as ArrayRef,
        ),
        (
            "k",
            Arc::new(Int32Array::from_iter_values((0..n as i32).map(|i| i % 7))) as ArrayRef,
        ),
        (
            "x",
            Arc::new(Int32Array::from_iter_values(
                (0..n as i32).map(|i| i % 101 - 50),
            )) as ArrayRef,
        ),
        (
            "a",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| (i as f64 * 0.37).sin() * 3.0),
            )) as ArrayRef,
        ),
        (
            "b",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| (i as f64 * 0.11).cos()),
            )) as ArrayRef,
        ),
        (
            "c",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| i as f64 / 100.0),
            )) as ArrayRef,
        ),
        (
            "s",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| ["p", "q", "r"][(i % 3) as usize]),
            )) as ArrayRef,
        ),
    ])
    .unwrap();
    let mut sessions = [Session::new(), Session::new()];
    for (t, s) in sessions.iter_mut().enumerate() {
        s.set_threads(t + 1);
        s.set_morsel_rows(64);
        s.register("t", vec![b.clone()]).unwrap();
        s.functions(
            "udf.c",
            "#include <stdbool.h>\ndouble f(double a, long x) { return a / (x % 5); }\nbool g(long x) { return 10 / (x + 50) > 0; }\n",
        )
        .unwrap();
    }
    // Every seed runs as written (or fails only at run time, naming a row).
    for q in SEEDS {
        if let Err(e) = sessions[0].sql(q) {
            assert!(
                matches!(e, tessera_query::QueryError::Row { .. }),
                "{q}: {e}"
            );
        }
    }
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let (mut ok, mut err) = (0, 0);
    for round in 0..3000 {
        let seed = SEEDS[rng.below(SEEDS.len() as u64) as usize];
        let mut words: Vec<String> = seed.split(' ').map(str::to_string).collect();
        for _ in 0..1 + rng.below(2) {
            let i = rng.below(words.len() as u64) as usize;
            let class = CLASSES.iter().find(|c| c.contains(&words[i].as_str()));
            match rng.below(5) {
                3 | 4 if class.is_some() => {
                    let c = class.expect("checked");
                    words[i] = c[rng.below(c.len() as u64) as usize].to_string();
                }
                0 if words.len() > 1 => {
                    words.remove(i);
                }
                1 => words.insert(
                    i,
                    TOKENS[rng.below(TOKENS.len() as u64) as usize].to_string(),
                ),
                _ => words[i] = TOKENS[rng.below(TOKENS.len() as u64) as usize].to_string(),
            }
        }
        let q = words.join(" ");
        let s = &sessions[round % 2];
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| s.sql(&q))) {
            Ok(Ok(_)) => ok += 1,
            Ok(Err(e)) => {
                let m = e.to_string();
                assert!(!m.is_empty(), "{q}: an empty error");
                assert!(!m.contains("internal error"), "{q}: {m}");
                err += 1;
                if std::env::var_os("FUZZ_SHOW").is_some() {
                    eprintln!("{q}\n   -> {m}");
                }
            }
            Err(_) => panic!("the query panicked: {q}"),
        }
    }
    // The mutations keep a fair share of the queries valid.
    eprintln!("{ok} ran, {err} refused");
    assert!(ok > 150 && err > 1000, "{ok} ran, {err} refused");
}
