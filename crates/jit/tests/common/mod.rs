//! Shared oracle helpers: run the interpreter and the JIT on the same inputs and compare.
#![allow(dead_code, clippy::result_large_err)]

use std::collections::HashMap;
use tessera_interp::Limits;
use tessera_ir::*;
use tessera_jit::{Compiled, Options};

/// A tiny seeded RNG (SplitMix64).
pub struct Rng(pub u64);
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
}

/// Headers every test program gets.
pub const PRELUDE: &str = "#include <math.h>\n#include <stdbool.h>\n";

pub fn prog(src: &str) -> Program {
    let src = format!("{PRELUDE}{src}");
    match tessera_sema::compile_source(&src, &HashMap::new()) {
        Ok(p) => p,
        Err(ds) => panic!("front end rejected:\n{src}\n{ds:#?}"),
    }
}

pub fn opts(limits: Limits) -> Options {
    Options {
        limits,
        ..Options::default()
    }
}

/// Interesting scalar values of a type.
pub fn special(t: ScalarTy, r: &mut Rng) -> Scalar {
    match t {
        ScalarTy::Bool => Scalar::Bool(r.chance(1, 2)),
        ScalarTy::I8 => Scalar::I8(*pick(r, &[0, 1, -1, 2, 7, -7, 100, i8::MIN, i8::MAX, -2])),
        ScalarTy::I32 => Scalar::I32(*pick(
            r,
            &[
                0,
                1,
                -1,
                2,
                3,
                7,
                -7,
                31,
                32,
                33,
                100,
                i32::MIN,
                i32::MAX,
                -2,
                5,
            ],
        )),
        ScalarTy::I64 => Scalar::I64(*pick(
            r,
            &[
                0,
                1,
                -1,
                2,
                3,
                63,
                64,
                -64,
                1 << 40,
                i64::MIN,
                i64::MAX,
                i32::MIN as i64,
                9,
                -3,
            ],
        )),
        ScalarTy::F32 => Scalar::F32(*pick(
            r,
            &[
                0.0,
                -0.0,
                1.5,
                -2.75,
                f32::NAN,
                f32::INFINITY,
                f32::NEG_INFINITY,
                3e9,
                -3e9,
                1e30,
                0.1,
                7.0,
            ],
        )),
        ScalarTy::F64 => Scalar::F64(*pick(
            r,
            &[
                0.0,
                -0.0,
                1.5,
                -2.75,
                f64::NAN,
                f64::INFINITY,
                f64::NEG_INFINITY,
                3e9,
                -3e9,
                1e300,
                1e19,
                -1e19,
                0.1,
                7.0,
                2.5e-310,
            ],
        )),
    }
}

pub fn pick<'a, T>(r: &mut Rng, xs: &'a [T]) -> &'a T {
    &xs[r.below(xs.len() as u64) as usize]
}

/// Random arguments for `fid`: scalars from `scalars` (by parameter position) or special
/// values; arrays shaped by the interpreter's `declared_shapes`, filled randomly.
pub fn random_args(
    p: &Program,
    fid: FuncId,
    fixed: &[Option<Scalar>],
    r: &mut Rng,
) -> Vec<ArgValue> {
    let f = p.func(fid);
    let scalars: Vec<Option<Scalar>> = f
        .params
        .iter()
        .enumerate()
        .map(|(k, v)| match f.var(*v).kind {
            VarKind::Scalar(t) => Some(
                fixed
                    .get(k)
                    .copied()
                    .flatten()
                    .unwrap_or_else(|| special(t, r)),
            ),
            VarKind::Array { .. } => None,
        })
        .collect();
    let shapes = tessera_interp::declared_shapes(p, fid, &scalars).unwrap_or_default();
    f.params
        .iter()
        .enumerate()
        .map(|(k, v)| match (&f.var(*v).kind, scalars[k]) {
            (VarKind::Scalar(_), Some(s)) => ArgValue::Scalar(s),
            (VarKind::Array { elem, rank }, _) => {
                let shape: Vec<usize> = match shapes.get(k) {
                    Some(Some(s)) => s.iter().map(|&x| x.clamp(0, 64) as usize).collect(),
                    _ => vec![1; *rank],
                };
                let mut d = ArrayData::zeros(*elem, &shape).unwrap();
                d.fill_random(r.next(), &f.var(*v).name);
                ArgValue::Array(d)
            }
            _ => unreachable!(),
        })
        .collect()
}

fn bits(a: &[ArgValue]) -> Vec<(Vec<usize>, Vec<u8>)> {
    a.iter()
        .filter_map(|x| match x {
            ArgValue::Array(d) => Some((d.shape.clone(), canon(&d.elems))),
            _ => None,
        })
        .collect()
}

fn scalar_bits(s: Option<Scalar>) -> Option<(ScalarTy, u64)> {
    s.map(|s| {
        (
            s.ty(),
            match s {
                Scalar::Bool(b) => b as u64,
                Scalar::I8(v) => v as u8 as u64,
                Scalar::I32(v) => v as u32 as u64,
                Scalar::I64(v) => v as u64,
                Scalar::F32(v) if v.is_nan() => u64::MAX,
                Scalar::F64(v) if v.is_nan() => u64::MAX,
                Scalar::F32(v) => v.to_bits() as u64,
                Scalar::F64(v) => v.to_bits(),
            },
        )
    })
}

/// Array bytes with every NaN canonicalised: LLVM does not preserve NaN sign/payload bits
/// (e.g. it rewrites `-x + y` as `y - x`), so NaNs compare equal to NaNs; everything else
/// is compared bit for bit.
fn canon(e: &ArrayElems) -> Vec<u8> {
    match e {
        ArrayElems::F32(v) => v
            .iter()
            .flat_map(|x| {
                if x.is_nan() {
                    [0xff; 4]
                } else {
                    x.to_le_bytes()
                }
            })
            .collect(),
        ArrayElems::F64(v) => v
            .iter()
            .flat_map(|x| {
                if x.is_nan() {
                    [0xff; 8]
                } else {
                    x.to_le_bytes()
                }
            })
            .collect(),
        e => e.to_le_bytes(),
    }
}

/// Runs both back ends on copies of `args` and asserts identical outcomes; returns it.
pub fn same(
    p: &Program,
    jit: &Compiled,
    fid: FuncId,
    args: &[ArgValue],
    limits: Limits,
    what: &str,
) -> Result<Option<Scalar>, RuntimeError> {
    let mut a1 = args.to_vec();
    let mut a2 = args.to_vec();
    let r1 = tessera_interp::call(p, fid, &mut a1, limits);
    let r2 = jit.call(fid, &mut a2);
    match (&r1, &r2) {
        (Ok(x), Ok(y)) => assert_eq!(
            scalar_bits(*x),
            scalar_bits(*y),
            "{what}: results differ ({x:?} vs {y:?}) for {args:?}"
        ),
        (Err(x), Err(y)) => assert_eq!(x, y, "{what}: errors differ for {args:?}"),
        _ => panic!("{what}: interpreter {r1:?} but JIT {r2:?} for {args:?}"),
    }
    assert!(
        bits(&a1) == bits(&a2),
        "{what}: arrays differ for {args:?}\ninterp {a1:?}\njit {a2:?}"
    );
    r1
}

/// Compiles `src` and compares `fname` on `n` random argument sets.
pub fn check(
    src: &str,
    fname: &str,
    n: usize,
    seed: u64,
) -> Vec<Result<Option<Scalar>, RuntimeError>> {
    check_with(src, fname, n, seed, Limits::default(), &[])
}

pub fn check_with(
    src: &str,
    fname: &str,
    n: usize,
    seed: u64,
    limits: Limits,
    fixed: &[Option<Scalar>],
) -> Vec<Result<Option<Scalar>, RuntimeError>> {
    let p = prog(src);
    let jit = Compiled::compile(&p, &opts(limits))
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{src}"));
    let (fid, _) = p.function(fname).expect("function");
    let mut r = Rng(seed);
    (0..n)
        .map(|_| {
            let args = random_args(&p, fid, fixed, &mut r);
            same(&p, &jit, fid, &args, limits, src)
        })
        .collect()
}

/// Runs fixed arguments through both back ends.
pub fn run_both(
    src: &str,
    fname: &str,
    args: Vec<ArgValue>,
    limits: Limits,
) -> Result<Option<Scalar>, RuntimeError> {
    let p = prog(src);
    let jit = Compiled::compile(&p, &opts(limits))
        .unwrap_or_else(|e| panic!("compile failed: {e}\n{src}"));
    let (fid, _) = p.function(fname).expect("function");
    same(&p, &jit, fid, &args, limits, src)
}

pub fn i32a(v: Vec<i32>) -> ArgValue {
    ArgValue::Array(ArrayData {
        shape: vec![v.len()],
        elems: ArrayElems::I32(v),
    })
}
pub fn f64a(shape: Vec<usize>, v: Vec<f64>) -> ArgValue {
    ArgValue::Array(ArrayData {
        shape,
        elems: ArrayElems::F64(v),
    })
}
pub fn si(v: i32) -> ArgValue {
    ArgValue::Scalar(Scalar::I32(v))
}
pub fn sl(v: i64) -> ArgValue {
    ArgValue::Scalar(Scalar::I64(v))
}
pub fn sd(v: f64) -> ArgValue {
    ArgValue::Scalar(Scalar::F64(v))
}

/// Runs `f` on a thread with a large stack (the debug-build interpreter needs several
/// kilobytes of native stack per TIR call level).
pub fn big_stack<F: FnOnce() + Send + 'static>(f: F) {
    std::thread::Builder::new()
        .stack_size(1 << 30)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap();
}
