mod common;
use common::*;

#[test]
fn dot() {
    let src = "double dot(int n, double x[n], double y[n]) { double s = 0; for (int i = 0; i < n; i++) s += x[i] * y[i]; return s; }";
    let r = run_both(
        src,
        "dot",
        vec![
            si(3),
            f64a(vec![3], vec![1.0, 2.0, 3.0]),
            f64a(vec![3], vec![4.0, 5.0, 6.0]),
        ],
        Default::default(),
    );
    assert_eq!(r, Ok(Some(tessera_ir::Scalar::F64(32.0))));
}
