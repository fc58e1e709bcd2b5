//! `tessera query`: SQL over CSV, Parquet and `.npy` files, compiled to fused JIT pipelines
//! (`tessera-query`).

use std::path::PathBuf;

use tessera_query::Session;

/// Arguments of `tessera query`.
#[derive(clap::Args)]
pub struct QueryArgs {
    /// The query: SELECT ... FROM table [WHERE ...] [GROUP BY ...] [ORDER BY ...] [LIMIT n].
    /// The table is a name given with --table, or a file path (quote it: "data/t.parquet").
    pub sql: String,
    /// A table: NAME=PATH (.csv, .parquet, .npy, or a directory of .npy columns).
    #[arg(long = "table", value_name = "NAME=PATH")]
    pub tables: Vec<String>,
    /// A kernel-language file of user functions the query may call.
    #[arg(long, value_name = "FILE")]
    pub functions: Option<PathBuf>,
    /// Worker threads (default: TESSERA_THREADS or all cores).
    #[arg(long)]
    pub threads: Option<usize>,
    /// Print the plan, the pipeline and the generated program, then the run's log.
    #[arg(long)]
    pub explain: bool,
    /// Write the result to a .csv or .parquet file instead of printing it.
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Run the query this many times and print the time of each run (after compiling once).
    #[arg(long, default_value_t = 1)]
    pub repeat: usize,
}

/// Runs `tessera query`.
pub fn run(a: QueryArgs) -> Result<(), String> {
    let mut s = Session::new();
    if let Some(t) = a.threads {
        if t == 0 {
            return Err("--threads must be at least 1".into());
        }
        s.set_threads(t);
    }
    for t in &a.tables {
        let (name, path) = t
            .split_once('=')
            .ok_or_else(|| format!("--table {t}: expected NAME=PATH"))?;
        s.register_file(name, std::path::Path::new(path))
            .map_err(|e| e.to_string())?;
    }
    if let Some(f) = &a.functions {
        let src = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
        s.functions(&f.display().to_string(), &src)
            .map_err(|e| e.to_string())?;
    }
    let q = s.prepare(&a.sql).map_err(|e| e.to_string())?;
    if a.explain {
        println!("{}", q.explain());
    }
    let mut last = None;
    for r in 0..a.repeat.max(1) {
        let t = std::time::Instant::now();
        let (b, log) = s.run(&q).map_err(|e| e.to_string())?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if a.repeat > 1 {
            eprintln!("run {}: {ms:.3} ms", r + 1);
        }
        last = Some((b, log));
    }
    let (b, log) = last.expect("ran at least once");
    if a.explain {
        println!(
            "run: {} rows in, {} selected, {} groups; morsels short-circuit {} / branch-free {}; hash growths {}; pipeline {:.2} ms, merge {:.2} ms, sort {:.2} ms",
            log.rows_in, log.rows_selected, log.groups, log.short_circuit, log.branchless, log.grows,
            log.pipeline_ms, log.merge_ms, log.sort_ms
        );
        for (m, s, c) in &log.decisions {
            println!("  morsel {m}: previous selectivity {s:.3} -> {c}");
        }
    }
    match &a.output {
        Some(p) => tessera_query::write(&b, p).map_err(|e| e.to_string())?,
        None => println!("{}", tessera_query::format(&b)),
    }
    Ok(())
}
