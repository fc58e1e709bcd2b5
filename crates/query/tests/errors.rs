//! Bad input gets a clear error naming what is wrong and where; nothing panics.

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch};
use tessera_query::{QueryError, Session};

fn session(n: usize, threads: usize) -> Session {
    let id: Vec<i64> = (0..n as i64).collect();
    // d is zero at rows 70000 and 140000 (in two different morsels).
    let d: Vec<i64> = (0..n as i64)
        .map(|i| if i % 70000 == 0 && i > 0 { 0 } else { 3 })
        .collect();
    let a: Vec<f64> = (0..n).map(|i| i as f64 * 0.5).collect();
    let b = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(id)) as ArrayRef),
        ("d", Arc::new(Int64Array::from(d)) as ArrayRef),
        ("a", Arc::new(Float64Array::from(a)) as ArrayRef),
    ])
    .unwrap();
    let mut s = Session::new();
    s.set_threads(threads);
    s.set_morsel_rows(1 << 16);
    s.register("t", vec![b]).unwrap();
    s.functions(
        "udf.c",
        "#include <stdbool.h>\nlong ratio(long x, long y) {\n  return x / y;\n}\nbool keep(double a, long k) { return a > 10 && k % 2 == 0; }\n",
    )
    .unwrap();
    s
}

#[test]
fn a_faulting_user_function_names_the_first_faulting_row() {
    for threads in [1, 2] {
        let s = session(200_000, threads);
        for q in [
            "SELECT ratio(id, d) FROM t",
            "SELECT sum(ratio(id, d)) FROM t",
            "SELECT id FROM t WHERE ratio(id, d) > 5",
            "SELECT id, ratio(id, d) AS r FROM t ORDER BY a DESC LIMIT 3",
            "SELECT d, sum(ratio(id, d)) FROM t GROUP BY d",
        ] {
            let e = s.sql(q).unwrap_err();
            let text = e.to_string();
            assert!(
                matches!(e, QueryError::Row { row: 70000, .. }),
                "{q}: {text}"
            );
            assert!(
                text.contains("udf.c:3:10: division by zero (in the user function `ratio`)"),
                "{q}: {text}"
            );
        }
        // Rows the filter drops are never evaluated (short-circuit, as written).
        let r = s
            .sql("SELECT count(*) FROM t WHERE d <> 0 AND ratio(id, d) >= 0")
            .unwrap();
        assert!(
            tessera_query::format(&r).contains("199998"),
            "{}",
            tessera_query::format(&r)
        );
        let e = s.sql("SELECT id // (d - 3) FROM t").unwrap_err();
        assert!(matches!(e, QueryError::Row { row: 0, .. }), "{e}");
        assert!(
            e.to_string()
                .contains("division by zero (in the query's expressions)"),
            "{e}"
        );
    }
}

#[test]
fn user_functions_are_inlined_and_boolean() {
    let s = session(1000, 1);
    let r = s
        .sql("SELECT count(*) AS n FROM t WHERE keep(a, id)")
        .unwrap();
    // a > 10 means id > 20; even ids among 21..999: 22, 24, ..., 998.
    assert!(
        tessera_query::format(&r).contains("| 489 |"),
        "{}",
        tessera_query::format(&r)
    );
}

#[test]
fn names_types_and_syntax_errors_point_into_the_query() {
    let s = session(10, 1);
    let cases = [
        ("SELECT nope FROM t", "query:1:8: unknown column `nope`; the table `t` has: id, d, a"),
        ("SELECT a FROM t WHERE a", "query:1:23: type error in `a`: WHERE needs a BOOLEAN condition, not DOUBLE"),
        ("SELECT frob(a) FROM t", "query:1:8: unknown function `frob`"),
        ("SELECT ratio(a, d) FROM t", "query:1:14: type error in `a`: the user function `ratio` takes BIGINT here, and a DOUBLE would be truncated"),
        ("SELECT ratio(d) FROM t", "takes 2 argument(s), not 1"),
        ("SELECT a FROM u", "query:1:15: unknown table `u`"),
        ("SELECT a FROM t JOIN t ON true", "joins"),
        ("SELECT id, sum(a) FROM t", "select items are group keys or aggregates"),
        ("SELECT a % 2 FROM t", "`//` and `%` take integers"),
        ("SELEC a FROM t", "syntax error"),
        ("SELECT a FROM t LIMIT -1", "LIMIT takes a non-negative integer constant"),
        ("SELECT CAST(a AS INTEGER) FROM t", "CAST of a floating-point value to an integer"),
        ("SELECT a FROM t GROUP BY a", "a floating-point key is not supported"),
    ];
    for (q, want) in cases {
        let e = s.sql(q).unwrap_err().to_string();
        assert!(e.contains(want), "{q}\n  got: {e}\n  want: {want}");
    }
}

#[test]
fn bad_files_and_functions_are_reported() {
    let dir = std::env::temp_dir().join(format!("tessera-qerr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("bad.csv");
    std::fs::write(&csv, "a,b\n1,2\n3\n4,5,6\n").unwrap();
    let mut s = Session::new();
    let e = s.register_file("bad", &csv).unwrap_err().to_string();
    assert!(e.contains("bad.csv") && e.contains("CSV"), "{e}");
    let pq = dir.join("bad.parquet");
    std::fs::write(&pq, "not parquet").unwrap();
    let e = s.register_file("bad", &pq).unwrap_err().to_string();
    assert!(e.contains("not a readable Parquet file"), "{e}");
    let e = s
        .functions("f.c", "double f(double x) { return x + ; }")
        .unwrap_err()
        .to_string();
    assert!(e.contains("f.c:1:"), "{e}");
    // NULLs are refused where a query uses the column.
    let b = RecordBatch::try_from_iter([(
        "v",
        Arc::new(Int64Array::from(vec![Some(1), None])) as ArrayRef,
    )])
    .unwrap();
    s.register("n", vec![b]).unwrap();
    let e = s.sql("SELECT sum(v) FROM n").unwrap_err().to_string();
    assert!(e.contains("column `v` has NULLs"), "{e}");
    // A CSV with a header, read and queried.
    let good = dir.join("good.csv");
    std::fs::write(&good, "k,v\n1,2.5\n2,3.5\n1,4.0\n").unwrap();
    s.register_file("g", &good).unwrap();
    let r = s
        .sql("SELECT k, sum(v) AS s FROM g GROUP BY k ORDER BY k")
        .unwrap();
    assert_eq!(
        tessera_query::format(&r),
        "+---+-----+\n| k | s   |\n+---+-----+\n| 1 | 6.5 |\n| 2 | 3.5 |\n+---+-----+"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn from_first_queries_select_every_column() {
    // DuckDB's `FROM t ...` without a SELECT list (found by the mutation test: it used to
    // fail building a result with no columns).
    let s = session(10, 1);
    let r = s.sql("FROM t ORDER BY id DESC LIMIT 2").unwrap();
    assert_eq!(r.num_columns(), 3);
    assert_eq!(
        tessera_query::format(&r),
        "+----+---+-----+\n| id | d | a   |\n+----+---+-----+\n| 9  | 3 | 4.5 |\n| 8  | 3 | 4.0 |\n+----+---+-----+"
    );
}
