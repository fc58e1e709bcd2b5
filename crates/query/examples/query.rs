//! Queries from Rust over Arrow record batches (no copy of the numeric columns), with a
//! user function in the kernel language.
//!
//! cargo run --release -p tessera-query --example query

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray};
use tessera_query::Session;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n = 1_000_000i64;
    let batch = RecordBatch::try_from_iter([
        (
            "k",
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i % 7))) as ArrayRef,
        ),
        (
            "a",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| (i as f64 * 0.37).sin()),
            )) as ArrayRef,
        ),
        (
            "b",
            Arc::new(Float64Array::from_iter_values(
                (0..n).map(|i| (i as f64 * 0.11).cos()),
            )) as ArrayRef,
        ),
        (
            "tag",
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| ["red", "green", "blue"][(i % 3) as usize]),
            )) as ArrayRef,
        ),
    ])?;
    let mut s = Session::new();
    s.register("t", vec![batch])?;
    s.functions(
        "score.c",
        "#include <math.h>\ndouble score(double a, double b) { return sqrt(a * a + b * b); }\n",
    )?;
    let q = s.prepare("SELECT tag, count(*) AS n, avg(score(a, b)) AS s FROM t WHERE a + b > 0 GROUP BY tag ORDER BY tag")?;
    println!("{}", q.explain());
    let (result, log) = s.run(&q)?;
    println!("{}", tessera_query::format(&result));
    println!(
        "pipeline {:.2} ms, {} morsels",
        log.pipeline_ms,
        log.short_circuit + log.branchless
    );
    // A bad query is an error value, never a panic.
    match s.sql("SELECT score(a) FROM t") {
        Err(e) => println!("error: {e}"),
        Ok(_) => unreachable!("score takes two arguments"),
    }
    Ok(())
}
