//! The counting build (instrumented program, LLVM JIT) counts exactly what the reference
//! interpreter's counting run counts, on every example kernel and corpus kernel at its
//! `// TEST:` sizes, and computes the same results.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use tessera_cost::calibrate::{bind_args, parse_define_line};
use tessera_cost::jit::{gamma_of, node_gammas, CountingBuild};
use tessera_cost::*;
use tessera_interp::Limits;

fn header(text: &str, key: &str) -> Vec<String> {
    let p = format!("// {key}: ");
    text.lines()
        .filter_map(|l| l.strip_prefix(&p))
        .map(|s| s.trim().to_string())
        .collect()
}

fn kernels() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut v = Vec::new();
    for d in ["examples/kernels", "tests/corpus", "examples/calibrate"] {
        let Ok(rd) = std::fs::read_dir(root.join(d)) else {
            continue;
        };
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "c") {
                v.push(e.path());
            }
        }
    }
    v.sort();
    v
}

#[test]
fn jit_counts_equal_interpreter_counts_on_every_kernel() {
    let mut checked = 0;
    for path in kernels() {
        let text = std::fs::read_to_string(&path).unwrap();
        let Some(entry) = header(&text, "ENTRY").into_iter().next() else {
            continue;
        };
        for line in header(&text, "TEST") {
            let defs = parse_define_line(&line);
            let overrides: HashMap<String, String> = defs.iter().cloned().collect();
            let mut src = tessera_syntax::SourceFile::new(path.display().to_string(), text.clone());
            let prog = tessera_sema::compile_file(&mut src, path.parent(), &overrides)
                .unwrap_or_else(|d| panic!("{}: {d:?}", path.display()));
            let (fid, _) = prog.function(&entry).unwrap();
            let args = bind_args(&prog, fid, &defs, 3).unwrap();
            let mut a1 = args.clone();
            let want = count_run(&prog, &entry, &mut a1, Limits::default());
            let build = CountingBuild::compile(&prog, &tessera_jit::Options::default()).unwrap();
            let mut a2 = args.clone();
            let got = build.count(&entry, &mut a2);
            match (want, got) {
                (Ok(w), Ok(g)) => {
                    let name = format!("{} {line}", path.display());
                    assert_eq!(w.node_counts, g.node_counts, "{name}");
                    assert_eq!(w.result, g.result, "{name}");
                    assert_eq!(sums(&a1), sums(&a2), "{name}: arrays");
                    assert!(w.label_executions() > 0, "{name}");
                    let counts: Vec<i64> = g.node_counts.iter().map(|&c| c as i64).collect();
                    for m in [CostModel::Cm0, CostModel::Cmc] {
                        let dot = gamma_of(&counts, &node_gammas(build.map(), &m));
                        assert_eq!(dot, g.gamma(&m), "{name}: Γ by nodes and by fragments");
                    }
                    checked += 1;
                }
                (Err(w), Err(g)) => assert_eq!(w.to_string(), g.to_string()),
                (w, g) => panic!("{}: interpreter {w:?}, JIT {g:?}", path.display()),
            }
        }
    }
    assert!(checked >= 60, "only {checked} kernel runs checked");
}

/// Array checksums (bitwise, NaNs canonicalised) and scalars, so NaN outputs compare equal.
fn sums(a: &[tessera_ir::ArgValue]) -> Vec<String> {
    a.iter()
        .map(|x| match x {
            tessera_ir::ArgValue::Array(d) => format!("{:x}", d.checksum()),
            s => format!("{s:?}"),
        })
        .collect()
}
