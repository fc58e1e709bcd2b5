//! `tessera query` from the command line: results, `--output`, `--explain`, exit codes and
//! located errors, on the example table `examples/queries/sales.csv`.

mod common;
use common::*;

fn query(args: &[&str]) -> (i32, String, String) {
    let o = tessera()
        .arg("query")
        .args(args)
        .current_dir(root())
        .output()
        .unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

const T: &str = "s=examples/queries/sales.csv";
const F: &str = "examples/queries/functions.c";

#[test]
fn query_prints_writes_and_explains() {
    // The example table's sums, computed independently from the CSV text.
    let csv = std::fs::read_to_string(root().join("examples/queries/sales.csv")).unwrap();
    let (mut n, mut qty) = (0i64, 0i64);
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if f[1] == "north" {
            n += 1;
            qty += f[3].parse::<i64>().unwrap();
        }
    }
    let (code, out, err) = query(&[
        "SELECT region, count(*) AS n, sum(qty) AS q FROM s GROUP BY region ORDER BY region",
        "--table",
        T,
    ]);
    assert_eq!(code, 0, "{err}");
    let north: Vec<String> = out
        .lines()
        .find(|l| l.starts_with("| north"))
        .unwrap_or_else(|| panic!("no north row in:\n{out}"))
        .split('|')
        .map(|c| c.trim().to_string())
        .collect();
    assert_eq!(
        north[1..4],
        ["north".to_string(), n.to_string(), qty.to_string()],
        "{out}"
    );
    let dir = scratch_dir("query_cli");
    let path = dir.join("r.csv");
    let (code, _, err) = query(&[
        "SELECT id, revenue(qty, price, discount) AS r FROM s WHERE big(qty, store) ORDER BY id",
        "--table",
        T,
        "--functions",
        F,
        "--output",
        path.to_str().unwrap(),
        "--threads",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.starts_with("id,r\n"), "{written}");
    let (code, out, _) = query(&[
        "SELECT count(*) FROM s WHERE qty > 10",
        "--table",
        T,
        "--explain",
    ]);
    assert_eq!(code, 0);
    for want in [
        "plan:",
        "filter qty > 10",
        "long tq_main(",
        "long tq_vec(",
        "run: 500 rows in",
        "compile:",
    ] {
        assert!(out.contains(want), "missing `{want}` in:\n{out}");
    }
}

#[test]
fn query_errors_exit_1_with_a_location() {
    let cases: [(&[&str], &str); 5] = [
        (&["SELECT nope FROM s", "--table", T], "error: query:1:8: unknown column `nope`"),
        (
            &["SELECT sum(per_unit_above(price, qty, 20)) FROM s", "--table", T, "--functions", F],
            "error: row 2 of `s`: examples/queries/functions.c:13:36: division by zero (in the user function `per_unit_above`)",
        ),
        (&["SELECT a FROM \"no/such.parquet\""], "unknown table `no/such.parquet`"),
        (&["SELECT 1 FROM s", "--table", "s"], "--table s: expected NAME=PATH"),
        (&["SELECT qty FROM s", "--table", T, "--functions", "no/such.c"], "no/such.c"),
    ];
    for (args, want) in cases {
        let (code, _, err) = query(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}\n  got: {err}\n  want: {want}");
        assert!(
            !err.contains("panicked") && !err.contains("internal"),
            "{err}"
        );
    }
}
