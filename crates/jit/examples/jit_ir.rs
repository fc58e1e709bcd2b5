//! Prints compile time, optimised IR and assembly of a small kernel, and times it against
//! the interpreter: `cargo run -p tessera-jit --release --example jit_ir [ir|asm]`.
use std::collections::HashMap;
use std::time::Instant;
use tessera_ir::{ArgValue, ArrayData, Scalar, ScalarTy};
use tessera_jit::{Compiled, Options};

const SRC: &str = "void axpy(int n, double a, double x[n], double y[n]) {
    for (int i = 0; i < n; i++) y[i] = y[i] + a * x[i];
}
void mm(int n, double A[n][n], double B[n][n], double C[n][n]) {
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            double s = 0;
            for (int k = 0; k < n; k++) s += A[i][k] * B[k][j];
            C[i][j] = s;
        }
}";

fn main() {
    let what = std::env::args().nth(1).unwrap_or_default();
    let prog = tessera_sema::compile_source(SRC, &HashMap::new()).unwrap();
    for guards in [true, false] {
        let opts = Options {
            guards,
            ..Options::default()
        };
        let jit = Compiled::compile(&prog, &opts).unwrap();
        println!(
            "guards={guards}: compile {:.1} ms for {} functions",
            jit.compile_ms(),
            prog.functions.len()
        );
        if what == "ir" && guards {
            println!("{}", jit.llvm_ir());
        }
        if what == "asm" && guards {
            println!("{}", jit.asm().unwrap());
        }
        let (fid, _) = prog.function("mm").unwrap();
        let n = 200usize;
        let arr = |s: &str| {
            let mut d = ArrayData::zeros(ScalarTy::F64, &[n, n]).unwrap();
            d.fill_random(1, s);
            ArgValue::Array(d)
        };
        let mut args = vec![
            ArgValue::Scalar(Scalar::I32(n as i32)),
            arr("A"),
            arr("B"),
            arr("C"),
        ];
        let t = Instant::now();
        jit.call(fid, &mut args).unwrap();
        println!("  mm n={n}: jit {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
        if guards {
            let mut args2 = vec![
                ArgValue::Scalar(Scalar::I32(n as i32)),
                arr("A"),
                arr("B"),
                arr("C"),
            ];
            let t = Instant::now();
            tessera_interp::call(&prog, fid, &mut args2, Default::default()).unwrap();
            println!(
                "  mm n={n}: interp {:.2} ms",
                t.elapsed().as_secs_f64() * 1e3
            );
            assert_eq!(args, args2);
        }
    }
}
