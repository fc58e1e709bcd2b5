//! The whole pipeline from Rust: `examples/kernels/gemm.c` through the polyhedral optimiser
//! and the JIT, run on two threads on `ndarray` matrices in place, checked bit for bit
//! against the reference interpreter; then what the optimiser did with it.
//!
//! `cargo run --release -p tessera --example optimise [N] [THREADS]`
use std::time::Instant;
use tessera::ndarray::Array2;
use tessera::{Args, Kernel, Mode};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut argv = std::env::args().skip(1);
    let n: usize = argv.next().map(|s| s.parse()).transpose()?.unwrap_or(120);
    let threads: usize = argv.next().map(|s| s.parse()).transpose()?.unwrap_or(2);
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/kernels/gemm.c");
    let src = std::fs::read_to_string(path)?;

    let build = |mode| {
        Kernel::builder(&src, "gemm")
            .file_name("examples/kernels/gemm.c")
            .mode(mode)
            .threads(threads)
    };
    let t = Instant::now();
    let opt = build(Mode::Opt).compile()?;
    println!(
        "compiled `{}` (opt, {threads} threads) in {:.1} ms",
        opt.signature(),
        t.elapsed().as_secs_f64() * 1e3
    );
    println!("{}", opt.poly_summary().unwrap_or_default());
    let interp = build(Mode::Interp).compile()?;

    let a = Array2::from_shape_fn((n, n), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0);
    let b = Array2::from_shape_fn((n, n), |(i, j)| ((i + 2 * j) % 5) as f64 - 2.0);
    let c0 = Array2::from_shape_fn((n, n), |(i, j)| (i as f64 - j as f64) / n as f64);

    let run = |k: &Kernel| -> Result<(Array2<f64>, f64), Box<dyn std::error::Error>> {
        let (mut a, mut b, mut c) = (a.clone(), b.clone(), c0.clone());
        let t = Instant::now();
        k.call(
            &mut Args::new()
                .scalar("ni", n)
                .scalar("nj", n)
                .scalar("nk", n)
                .scalar("alpha", 1.5)
                .scalar("beta", 1.2)
                .array_nd("C", &mut c)
                .array_nd("A", &mut a)
                .array_nd("B", &mut b),
        )?;
        Ok((c, t.elapsed().as_secs_f64() * 1e3))
    };
    let (c_opt, ms_opt) = run(&opt)?;
    let (c_ref, ms_ref) = run(&interp)?;
    println!("opt: {ms_opt:.1} ms; interpreter: {ms_ref:.1} ms");
    let same = c_opt
        .iter()
        .zip(c_ref.iter())
        .all(|(x, y)| x.to_bits() == y.to_bits());
    println!(
        "opt and interpreter agree bit for bit: {same} (C[0][0] = {}, C[{m}][{m}] = {})",
        c_opt[[0, 0]],
        c_opt[[n - 1, n - 1]],
        m = n - 1
    );
    if !same {
        return Err("the optimised kernel differs from the interpreter".into());
    }

    // What the optimiser did: the first lines of `tessera explain`.
    println!("\nexplain (first 12 lines):");
    for l in opt.explain().lines().take(12) {
        println!("  {l}");
    }

    // A bad call is an error value, the same in every mode.
    let mut small = vec![0.0; 4];
    let err = opt
        .call(
            &mut Args::new()
                .scalar("ni", 3)
                .scalar("nj", 2)
                .scalar("nk", 2)
                .scalar("alpha", 1.0)
                .scalar("beta", 1.0)
                .array("C", &mut small, &[2, 2]),
        )
        .unwrap_err();
    println!("\na bad call: {err}");
    Ok(())
}
