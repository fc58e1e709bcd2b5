//! The interpreter against hand-derived values of C semantics (and of Tessera's definitions
//! where C has none), one small program per rule of docs/language.md.

use std::collections::HashMap;
use tessera_ir::{ArgValue, ArrayData, ArrayElems, ErrorKind, Scalar};

fn run(
    src: &str,
    entry: &str,
    args: Vec<ArgValue>,
) -> Result<(Option<Scalar>, Vec<ArgValue>), ErrorKind> {
    let prog =
        tessera_sema::compile_source(src, &HashMap::new()).unwrap_or_else(|d| panic!("{d:?}"));
    let (fid, _) = prog.function(entry).unwrap();
    let mut args = args;
    match tessera_interp::call(&prog, fid, &mut args, Default::default()) {
        Ok(v) => Ok((v, args)),
        Err(e) => Err(e.kind),
    }
}

fn val(src: &str, entry: &str, args: Vec<ArgValue>) -> Scalar {
    run(src, entry, args).unwrap().0.unwrap()
}

fn i(x: i32) -> ArgValue {
    ArgValue::Scalar(Scalar::I32(x))
}

#[test]
fn signed_overflow_wraps() {
    assert_eq!(
        val("int f(int x) { return x + 1; }", "f", vec![i(i32::MAX)]),
        Scalar::I32(i32::MIN)
    );
    assert_eq!(
        val("int f(int x) { return -x; }", "f", vec![i(i32::MIN)]),
        Scalar::I32(i32::MIN)
    );
    assert_eq!(
        val(
            "int f(int x) { return x * 65536 * 65536; }",
            "f",
            vec![i(3)]
        ),
        Scalar::I32(0)
    );
    assert_eq!(
        val("int f(int x) { x++; return x; }", "f", vec![i(i32::MAX)]),
        Scalar::I32(i32::MIN)
    );
}

#[test]
fn division_semantics() {
    assert_eq!(
        val(
            "int f(int a, int b) { return a / b; }",
            "f",
            vec![i(-7), i(2)]
        ),
        Scalar::I32(-3)
    );
    assert_eq!(
        val(
            "int f(int a, int b) { return a % b; }",
            "f",
            vec![i(-7), i(2)]
        ),
        Scalar::I32(-1)
    );
    assert_eq!(
        val(
            "int f(int a, int b) { return a / b; }",
            "f",
            vec![i(i32::MIN), i(-1)]
        ),
        Scalar::I32(i32::MIN)
    );
    assert_eq!(
        val(
            "int f(int a, int b) { return a % b; }",
            "f",
            vec![i(i32::MIN), i(-1)]
        ),
        Scalar::I32(0)
    );
    assert_eq!(
        run(
            "int f(int a, int b) { return a % b; }",
            "f",
            vec![i(1), i(0)]
        )
        .unwrap_err(),
        ErrorKind::DivisionByZero
    );
    assert_eq!(
        run("int f(int a) { a /= 0; return a; }", "f", vec![i(1)]).unwrap_err(),
        ErrorKind::DivisionByZero
    );
    // Floating division by zero is IEEE, not an error.
    assert_eq!(
        val("double f(int a) { return a / 0.0; }", "f", vec![i(1)]),
        Scalar::F64(f64::INFINITY)
    );
}

#[test]
fn shifts() {
    assert_eq!(
        val("int f(int a) { return a << 31; }", "f", vec![i(1)]),
        Scalar::I32(i32::MIN)
    );
    assert_eq!(
        val("int f(int a) { return a >> 1; }", "f", vec![i(-8)]),
        Scalar::I32(-4)
    );
    assert_eq!(
        val("long f(int a) { return 1L << a; }", "f", vec![i(40)]),
        Scalar::I64(1 << 40)
    );
    assert_eq!(
        run("int f(int a) { return 1 << a; }", "f", vec![i(32)]).unwrap_err(),
        ErrorKind::InvalidShift {
            count: 32,
            width: 32
        }
    );
    assert_eq!(
        run("int f(int a) { return 1 >> a; }", "f", vec![i(-1)]).unwrap_err(),
        ErrorKind::InvalidShift {
            count: -1,
            width: 32
        }
    );
}

#[test]
fn conversions() {
    // Usual arithmetic conversions: int / int is integer division; with a double it is not.
    assert_eq!(
        val("double f(int a) { return a / 2; }", "f", vec![i(7)]),
        Scalar::F64(3.0)
    );
    assert_eq!(
        val("double f(int a) { return a / 2.0; }", "f", vec![i(7)]),
        Scalar::F64(3.5)
    );
    // int + float is float: 16777217 is not representable in float.
    assert_eq!(
        val(
            "double f(int a) { return a + 0.0f; }",
            "f",
            vec![i(16777217)]
        ),
        Scalar::F64(16777216.0)
    );
    // Truncation toward zero; saturation and NaN -> 0 where C is undefined.
    assert_eq!(
        val(
            "int f(double x) { return (int)x; }",
            "f",
            vec![ArgValue::Scalar(Scalar::F64(-2.9))]
        ),
        Scalar::I32(-2)
    );
    assert_eq!(
        val(
            "int f(double x) { return (int)x; }",
            "f",
            vec![ArgValue::Scalar(Scalar::F64(1e300))]
        ),
        Scalar::I32(i32::MAX)
    );
    assert_eq!(
        val(
            "int f(double x) { return (int)x; }",
            "f",
            vec![ArgValue::Scalar(Scalar::F64(f64::NAN))]
        ),
        Scalar::I32(0)
    );
    // long -> int keeps the low 32 bits.
    assert_eq!(
        val(
            "int f(long x) { return (int)x; }",
            "f",
            vec![ArgValue::Scalar(Scalar::I64(0x1_0000_0005))]
        ),
        Scalar::I32(5)
    );
    // bool conversion is != 0, and bool arithmetic promotes to int.
    assert_eq!(
        val(
            "int f(double x) { _Bool b = x; return b + b; }",
            "f",
            vec![ArgValue::Scalar(Scalar::F64(0.5))]
        ),
        Scalar::I32(2)
    );
    // Compound assignment computes in the common type: i += 2.7 adds 2.7, then truncates.
    assert_eq!(
        val("int f(int a) { a += 2.7; return a; }", "f", vec![i(1)]),
        Scalar::I32(3)
    );
    // Comparisons yield int.
    assert_eq!(
        val(
            "int f(int a) { return (a < 3) + (a == 2) * 10; }",
            "f",
            vec![i(2)]
        ),
        Scalar::I32(11)
    );
    // Literals: 2147483648 does not fit int, so it is long.
    assert_eq!(
        val("long f(int a) { return 2147483648 + a; }", "f", vec![i(1)]),
        Scalar::I64(2147483649)
    );
    assert_eq!(
        val("int f(int a) { return 017 + 0x10 + a; }", "f", vec![i(0)]),
        Scalar::I32(31)
    );
}

#[test]
fn evaluation_order_and_short_circuit() {
    let src = "int f(int n, int a[n]) { int k = 0; a[k++] = k * 10; a[k++] = k * 10; return k; }";
    let (r, args) = run(
        src,
        "f",
        vec![
            i(2),
            ArgValue::Array(ArrayData::zeros(tessera_ir::ScalarTy::I32, &[2]).unwrap()),
        ],
    )
    .unwrap();
    assert_eq!(r, Some(Scalar::I32(2)));
    // Left to right: the index is evaluated (k becomes 1) before the value.
    assert_eq!(
        args[1],
        ArgValue::Array(ArrayData {
            shape: vec![2],
            elems: ArrayElems::I32(vec![10, 20])
        })
    );
    // && and || short-circuit: the division by zero is never evaluated.
    assert_eq!(
        val(
            "int f(int a) { return a != 0 && 10 / a > 1; }",
            "f",
            vec![i(0)]
        ),
        Scalar::I32(0)
    );
    assert_eq!(
        val(
            "int f(int a) { return a == 0 || 10 / a > 1; }",
            "f",
            vec![i(0)]
        ),
        Scalar::I32(1)
    );
    assert_eq!(
        val("int f(int a) { return a ? 10 / a : 7; }", "f", vec![i(0)]),
        Scalar::I32(7)
    );
}

#[test]
fn control_flow() {
    let src = "int f(int n) { int s = 0; for (int i = 0; i < n; i++) { if (i % 2) continue; if (i > 6) break; s += i; } return s; }";
    assert_eq!(val(src, "f", vec![i(100)]), Scalar::I32(2 + 4 + 6));
    let src = "int f(int n) { int c = 0; do { c++; } while (c < n); return c; }";
    assert_eq!(val(src, "f", vec![i(0)]), Scalar::I32(1));
    let src = "int f(int n) { int c = 0; while (1) { if (++c >= n) break; } return c; }";
    assert_eq!(val(src, "f", vec![i(5)]), Scalar::I32(5));
    // continue in a for loop runs the step.
    let src =
        "int f(int n) { int c = 0; for (int i = 0; i < n; i++) { c++; continue; } return c; }";
    assert_eq!(val(src, "f", vec![i(4)]), Scalar::I32(4));
    let src = "long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }";
    assert_eq!(val(src, "fib", vec![i(20)]), Scalar::I64(6765));
}

#[test]
fn arrays_and_sub_arrays() {
    let src = "double rowsum(int d, double x[d]) { double s = 0; for (int j = 0; j < d; j++) s += x[j]; return s; }
               double f(int n, int d, double X[n][d]) { double t = 0; for (int i = 0; i < n; i++) t += rowsum(d, X[i]) * (i + 1); return t; }";
    let x = ArrayData {
        shape: vec![2, 3],
        elems: ArrayElems::F64(vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]),
    };
    assert_eq!(
        val(src, "f", vec![i(2), i(3), ArgValue::Array(x.clone())]),
        Scalar::F64(6.0 + 2.0 * 15.0)
    );
    // A callee may declare a shorter first extent, never a longer one.
    let src2 = "double g(int d, double x[d]) { return x[d-1]; } double f(int n, int d, double X[n][d]) { return g(d + 1, X[0]); }";
    assert!(matches!(
        run(src2, "f", vec![i(2), i(3), ArgValue::Array(x.clone())]).unwrap_err(),
        ErrorKind::ShapeMismatch { ref declared, ref given, .. } if *declared == vec![4] && *given == vec![3]
    ));
    // Bounds errors report the whole index and the shape.
    let src3 = "double f(int n, int d, double X[n][d]) { return X[1][d]; }";
    assert_eq!(
        run(src3, "f", vec![i(2), i(3), ArgValue::Array(x)]).unwrap_err(),
        ErrorKind::IndexOutOfBounds {
            array: "X".into(),
            index: vec![1, 3],
            shape: vec![2, 3],
            dim: 1
        }
    );
    // Local arrays start zeroed and are re-allocated per iteration.
    let src4 = "int f(int n) { int s = 0; for (int i = 0; i < n; i++) { int t[3]; s += t[i % 3]; t[i % 3] = 5; } return s; }";
    assert_eq!(val(src4, "f", vec![i(10)]), Scalar::I32(0));
    assert!(matches!(
        run("int f(int n) { int t[n]; return 0; }", "f", vec![i(-1)]).unwrap_err(),
        ErrorKind::BadExtent { .. }
    ));
}

#[test]
fn missing_return_and_recursion_limit() {
    assert!(matches!(
        run("int f(int n) { if (n) return 1; }", "f", vec![i(0)]).unwrap_err(),
        ErrorKind::MissingReturn { .. }
    ));
    assert!(matches!(
        run("int f(int n) { return f(n + 1); }", "f", vec![i(0)]).unwrap_err(),
        ErrorKind::StackOverflow { .. }
    ));
}

#[test]
fn math_builtins_are_libm() {
    assert_eq!(val("#include <math.h>\ndouble f(int a) { return pow(2.0, a) + sqrt(16.0) + fabs(-1.5) + floor(-0.5) + ceil(0.2); }", "f", vec![i(10)]), Scalar::F64(1024.0 + 4.0 + 1.5 - 1.0 + 1.0));
    assert_eq!(
        val(
            "long f(int a) { return min(a, 3) + max(a, 3L); }",
            "f",
            vec![i(5)]
        ),
        Scalar::I64(8)
    );
    assert_eq!(
        val(
            "#include <math.h>\ndouble f(int a) { return fmin(a, 0.5) + exp(0.0) + log(1.0); }",
            "f",
            vec![i(5)]
        ),
        Scalar::F64(1.5)
    );
}

#[test]
fn defines_are_substituted_and_overridable() {
    let src = "#define N 10\n#define M (N + 1)\nint f(int a) { return a * M; }";
    assert_eq!(val(src, "f", vec![i(2)]), Scalar::I32(22));
    let prog =
        tessera_sema::compile_source(src, &HashMap::from([("N".to_string(), "20".to_string())]))
            .unwrap();
    let mut args = vec![i(2)];
    let r = tessera_interp::call(
        &prog,
        prog.function("f").unwrap().0,
        &mut args,
        Default::default(),
    )
    .unwrap();
    assert_eq!(r, Some(Scalar::I32(42)));
}
