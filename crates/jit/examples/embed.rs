//! Calling Tessera from Rust: compile `examples/kernels/gemm.c` once, call it on `ndarray`
//! matrices by argument name, check the result against a plain Rust triple loop, and show
//! the errors a bad call gets.
//!
//! `cargo run --release -p tessera-jit --example embed [N]`
use std::time::Instant;
use tessera_jit::ndarray::Array2;
use tessera_jit::{Args, Kernel, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(300);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kernels/gemm.c");
    let src = std::fs::read_to_string(path)?;

    let t = Instant::now();
    let gemm = Kernel::builder(&src, "gemm")
        .file_name("examples/kernels/gemm.c")
        .options(&Options::default())
        .compile()?;
    println!(
        "compiled `{}` in {:.1} ms",
        gemm.signature(),
        t.elapsed().as_secs_f64() * 1e3
    );

    let a = Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0);
    let b = Array2::from_shape_fn((n, n), |(i, j)| ((i * 5 + j) % 13) as f64 / 13.0);
    let c0 = Array2::from_shape_fn((n, n), |(i, j)| (i + j) as f64 / n as f64);
    let (alpha, beta) = (1.5, 1.2);

    // The arguments of one call: the scalars by name, the three matrices as ndarray views.
    fn args<'a>(
        n: usize,
        (alpha, beta): (f64, f64),
        c: &'a mut Array2<f64>,
        a: &'a mut Array2<f64>,
        b: &'a mut Array2<f64>,
    ) -> Args<'a> {
        Args::new()
            .scalar("ni", n)
            .scalar("nj", n)
            .scalar("nk", n)
            .scalar("alpha", alpha)
            .scalar("beta", beta)
            .array_nd("C", c)
            .array_nd("A", a)
            .array_nd("B", b)
    }
    let (mut a_t, mut b_t, mut c) = (a.clone(), b.clone(), c0.clone());
    let t = Instant::now();
    gemm.call(&mut args(n, (alpha, beta), &mut c, &mut a_t, &mut b_t))?;
    let jit_ms = t.elapsed().as_secs_f64() * 1e3;

    // The same computation in plain Rust, in the kernel's loop order (so results agree
    // bit for bit).
    let t = Instant::now();
    let mut r = c0.clone();
    for i in 0..n {
        for j in 0..n {
            r[[i, j]] *= beta;
        }
        for k in 0..n {
            let aik = alpha * a[[i, k]];
            for j in 0..n {
                r[[i, j]] += aik * b[[k, j]];
            }
        }
    }
    let rust_ms = t.elapsed().as_secs_f64() * 1e3;
    let same = c
        .iter()
        .zip(r.iter())
        .all(|(x, y)| x.to_bits() == y.to_bits());
    println!("gemm {n}x{n}x{n}: tessera {jit_ms:.1} ms, plain Rust (ndarray indexing) {rust_ms:.1} ms, results identical: {same}");

    // Bad calls are reported before anything runs, naming the argument.
    let mut small = Array2::<f64>::zeros((n, n - 1));
    let err = gemm
        .call(&mut args(n, (alpha, beta), &mut small, &mut a_t, &mut b_t))
        .unwrap_err();
    println!("a wrong shape:   {err}");
    let err = gemm
        .call(&mut Args::new().scalar("ni", n).array_nd("C", &mut c))
        .unwrap_err();
    println!("a missing value: {err}");
    if !same {
        return Err("the kernel's result differs from the Rust reference".into());
    }
    Ok(())
}
