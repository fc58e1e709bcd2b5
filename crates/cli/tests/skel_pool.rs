//! A JIT-compiled kernel that fails a bounds guard in one task of many, run through the
//! runtime's skeletons on one pool: the call returns exactly that error (the interpreter's
//! kind, array, index and location), and the same pool then runs the next skeleton
//! correctly.

#![allow(clippy::result_large_err)] // CallError carries the full RuntimeError, on purpose

use tessera_jit::{Args, CallError, ErrorKind, Kernel, Options};
use tessera_runtime::{Runtime, SkelError};

const SRC: &str = "long work(int i, int bad) {
    long t[8];
    long s = 0;
    for (int j = 0; j < 2000; j++)
        s += (j ^ i) % 5;
    t[i % 8] = s;
    if (i == bad)
        s += t[i];
    return s;
}";

#[test]
fn guard_failure_in_one_task_then_pool_reused() {
    let k = Kernel::compile(SRC, "work", &Options::default()).unwrap();
    let call = |i: i64, bad: i64| -> Result<i64, CallError> {
        let r = k.call(&mut Args::new().scalar("i", i).scalar("bad", bad))?;
        Ok(r.expect("long result").as_i64())
    };
    let rt = Runtime::new(Some(2)).unwrap();
    let xs: Vec<i64> = (0..500).collect();
    let seq: Vec<i64> = xs.iter().map(|&i| call(i, -1).unwrap()).collect();
    for round in 0..3 {
        for tau in [1, 7, 64] {
            let r = rt.par_map_chunk(tau, |&i| call(i, 321), &xs);
            let e = match r {
                Err(SkelError::Task(CallError::Runtime(e))) => e,
                other => panic!("expected the guard failure, got {other:?}"),
            };
            assert!(
                matches!(&e.kind, ErrorKind::IndexOutOfBounds { array, index, .. } if array == "t" && index == &[321]),
                "{e}"
            );
            assert_eq!((e.loc.line, e.function.as_str()), (8, "work"));
            let r = rt.par_map_stride(tau, |&i| call(i, 499), &xs);
            assert!(
                matches!(r, Err(SkelError::Task(CallError::Runtime(_)))),
                "{r:?}"
            );
            // The pool is intact: the next run on it is complete and correct.
            let ok = rt.par_map_chunk(tau, |&i| call(i, -1), &xs).unwrap();
            assert_eq!(ok, seq, "round {round}, tau {tau}");
        }
    }
}
