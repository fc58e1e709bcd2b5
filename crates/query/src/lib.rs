//! Compiled data operators: SQL queries over Arrow columns, each compiled to one fused
//! pipeline in the kernel language and JIT-compiled by Tessera's LLVM back end, with the
//! same guards as every kernel; user functions written in the kernel language are compiled
//! into the same program and inlined.
//!
//! The pipeline of a query (see `ARCHITECTURE.md`):
//!
//! 1. [`plan::parse`] (sqlparser, DuckDB dialect) and [`plan::plan`]: names resolved against
//!    the table, types checked, expressions rendered as kernel-language text;
//! 2. [`exec`]'s shape choice: projection, top-k (ORDER BY one key with a small LIMIT), or
//!    aggregation with one group, dense arrays (one integer key of small range) or a hash
//!    table;
//! 3. [`codegen::generate`]: the program (user functions + `tq_main`, `tq_vec`, `tq_gather`,
//!    `tq_locate`);
//! 4. `tessera_jit::Kernel::compile`;
//! 5. [`exec`]: morsels (256K rows by default) on the runtime's pool, per-worker state, the filter's
//!    strategy chosen per morsel from the selectivity measured on the previous one, merging,
//!    [`sort`], OFFSET/LIMIT, an Arrow `RecordBatch`.
//!
//! ```
//! use tessera_query::Session;
//! use arrow::array::{Float64Array, RecordBatch};
//! use std::sync::Arc;
//!
//! let a = Arc::new(Float64Array::from(vec![1.0, -2.0, 3.0]));
//! let batch = RecordBatch::try_from_iter([("a", a as _)]).unwrap();
//! let mut s = Session::new();
//! s.register("t", vec![batch]).unwrap();
//! s.functions("udf.c", "double sq(double x) { return x * x; }").unwrap();
//! let r = s.sql("SELECT sum(sq(a)) AS s FROM t WHERE a > 0").unwrap();
//! assert_eq!(tessera_query::format(&r), "+------+\n| s    |\n+------+\n| 10.0 |\n+------+");
//! ```

pub mod codegen;
pub mod error;
pub mod exec;
pub mod plan;
pub mod sort;
pub mod table;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::array::RecordBatch;

pub use error::{QueryError, Result};
pub use exec::RunLog;
pub use table::{Table, Ty};

use plan::UserFn;

/// Tables, user functions and the thread count; runs queries.
pub struct Session {
    tables: HashMap<String, Arc<Table>>,
    user_src: String,
    user_file: String,
    udfs: HashMap<String, UserFn>,
    threads: Option<usize>,
    morsel_rows: usize,
    runtime: Mutex<Option<Arc<tessera_runtime::Runtime>>>,
}

impl Default for Session {
    fn default() -> Session {
        Session::new()
    }
}

/// A checked and compiled query, ready to run (several times).
pub struct Query {
    plan: plan::Plan,
    compiled: exec::Compiled,
    table: Arc<Table>,
    /// Milliseconds to plan and generate the pipeline.
    pub plan_ms: f64,
    /// Milliseconds in the JIT (front end + LLVM).
    pub compile_ms: f64,
}

impl Session {
    /// An empty session; threads as the runtime's default (`TESSERA_THREADS` or all cores).
    pub fn new() -> Session {
        Session {
            tables: HashMap::new(),
            user_src: String::new(),
            user_file: "functions.c".into(),
            udfs: HashMap::new(),
            threads: None,
            morsel_rows: exec::MORSEL,
            runtime: Mutex::new(None),
        }
    }

    /// Runs queries on `n` worker threads.
    pub fn set_threads(&mut self, n: usize) {
        self.threads = Some(n);
        *self.runtime.lock().expect("not poisoned") = None;
    }

    /// Cuts tables into morsels of `n` rows (default [`exec::MORSEL`]; at least 1). Small
    /// morsels exercise the merging of many per-morsel results (the tests use them).
    pub fn set_morsel_rows(&mut self, n: usize) {
        self.morsel_rows = n.max(1);
    }

    fn runtime(&self) -> Result<Arc<tessera_runtime::Runtime>> {
        let mut r = self.runtime.lock().expect("not poisoned");
        if let Some(rt) = &*r {
            return Ok(rt.clone());
        }
        let rt = Arc::new(
            tessera_runtime::Runtime::new(self.threads)
                .map_err(|e| QueryError::Internal(format!("thread pool: {e}")))?,
        );
        *r = Some(rt.clone());
        Ok(rt)
    }

    /// Registers record batches (one schema) as table `name`. Numeric columns are used in
    /// place (no copy).
    pub fn register(&mut self, name: &str, batches: Vec<RecordBatch>) -> Result<()> {
        let t = Table::new(name, batches)?;
        self.tables.insert(name.to_string(), Arc::new(t));
        Ok(())
    }

    /// Registers a table read from a file (see [`Table::read`]) under `name`.
    pub fn register_file(&mut self, name: &str, path: &Path) -> Result<()> {
        let mut t = Table::read(path)?;
        t.name = name.to_string();
        self.tables.insert(name.to_string(), Arc::new(t));
        Ok(())
    }

    /// Sets the user functions: kernel-language source (`file` names it in diagnostics and
    /// run-time errors). Functions whose parameters are all scalars may be called from SQL.
    pub fn functions(&mut self, file: &str, src: &str) -> Result<()> {
        let prog = tessera_sema::compile_source(src, &HashMap::new()).map_err(|ds| {
            QueryError::UserFunctions(tessera_syntax::diag::render_all(
                &tessera_syntax::SourceFile::new(file, src),
                &ds,
            ))
        })?;
        let mut udfs = HashMap::new();
        for f in &prog.functions {
            if f.name.starts_with("tq_") {
                return Err(QueryError::UserFunctions(format!(
                    "{file}: the prefix `tq_` is reserved for the query's own functions (`{}`)",
                    f.name
                )));
            }
            let ty = |t: tessera_ir::ScalarTy| match t {
                tessera_ir::ScalarTy::Bool => Ty::Bool,
                tessera_ir::ScalarTy::I8 | tessera_ir::ScalarTy::I32 => Ty::I32,
                tessera_ir::ScalarTy::I64 => Ty::I64,
                tessera_ir::ScalarTy::F32 => Ty::F32,
                tessera_ir::ScalarTy::F64 => Ty::F64,
            };
            let mut params = Vec::new();
            let mut scalar = true;
            for p in &f.params {
                match f.var(*p).kind {
                    tessera_ir::VarKind::Scalar(t) => params.push(ty(t)),
                    _ => scalar = false,
                }
            }
            if let (true, Some(r)) = (scalar, f.ret) {
                udfs.insert(f.name.clone(), UserFn { params, ret: ty(r) });
            }
        }
        self.user_src = src.to_string();
        self.user_file = file.to_string();
        self.udfs = udfs;
        Ok(())
    }

    fn table(&self, q: &sqlparser::ast::Query) -> Result<Arc<Table>> {
        let (name, pos) = plan::table_name(q)?;
        if let Some(t) = self.tables.get(&name) {
            return Ok(t.clone());
        }
        let p = Path::new(&name);
        if p.exists() {
            return Ok(Arc::new(Table::read(p)?));
        }
        Err(QueryError::UnknownTable { pos, name })
    }

    /// Parses, checks and compiles `sql`.
    pub fn prepare(&self, sql: &str) -> Result<Query> {
        let t0 = Instant::now();
        let q = plan::parse(sql)?;
        let table = self.table(&q)?;
        let plan = plan::plan(&q, &table, &self.udfs)?;
        let shape = exec::shape(&plan, &table);
        let gen = codegen::generate(&plan, &table, shape, &self.user_src);
        let plan_ms = t0.elapsed().as_secs_f64() * 1e3;
        let t1 = Instant::now();
        let opts = tessera_jit::Options::default();
        let main = tessera_jit::Kernel::builder(&gen.source, "tq_main")
            .file_name(&self.user_file)
            .options(&opts)
            .compile()
            .map_err(|e| match e {
                tessera_jit::CompileError::Frontend { rendered, .. } => {
                    QueryError::Internal(format!(
                        "the generated pipeline does not compile:\n{rendered}\n{}",
                        gen.source
                    ))
                }
                e => QueryError::Internal(e.to_string()),
            })?;
        let get = |name: &str| tessera_jit::Kernel::from_compiled(main.compiled().clone(), name);
        let compiled = exec::Compiled {
            vec: if gen.has_vec { get("tq_vec") } else { None },
            gather: get("tq_gather"),
            locate: std::sync::OnceLock::new(),
            dicts: exec::dictionaries(&table, &gen.dicts),
            main,
            user_lines: self.user_src.lines().count(),
            user_file: self.user_file.clone(),
            gen,
        };
        Ok(Query {
            plan,
            compiled,
            table,
            plan_ms,
            compile_ms: t1.elapsed().as_secs_f64() * 1e3,
        })
    }

    /// Runs `query` on the session's pool.
    pub fn run(&self, query: &Query) -> Result<(RecordBatch, RunLog)> {
        let rt = self.runtime()?;
        let mut log = RunLog::default();
        let r = exec::run(
            &query.plan,
            &query.compiled,
            &query.table,
            &rt,
            self.morsel_rows,
            &mut log,
        )?;
        Ok((r, log))
    }

    /// Prepares and runs `sql`.
    pub fn sql(&self, sql: &str) -> Result<RecordBatch> {
        let q = self.prepare(sql)?;
        Ok(self.run(&q)?.0)
    }
}

impl Query {
    /// The plan, the pipeline's shape and the generated program, as text.
    pub fn explain(&self) -> String {
        let p = &self.plan;
        let mut s = String::new();
        s.push_str(&format!(
            "table: {} ({} rows, {} batches)\n",
            self.table.name,
            self.table.rows(),
            self.table.batches.len()
        ));
        s.push_str("plan:\n");
        s.push_str(&format!("  scan {}\n", self.table.name));
        if let Some(f) = &p.filter {
            s.push_str(&format!("  filter {}  (can fail: {})\n", f.sql, f.can_fail));
        }
        match &p.body {
            plan::Body::Project(outs) => {
                for (k, o) in outs.iter().enumerate() {
                    let hidden = if k >= p.visible {
                        " (sort key, hidden)"
                    } else {
                        ""
                    };
                    s.push_str(&format!("  project {} : {}{hidden}\n", o.sql, o.ty.sql()));
                }
            }
            plan::Body::Aggregate { keys, aggs, .. } => {
                for k in keys {
                    s.push_str(&format!("  group by {} : {}\n", k.sql, k.ty.sql()));
                }
                for a in aggs {
                    s.push_str(&format!(
                        "  aggregate {:?}({})\n",
                        a.f,
                        a.arg.as_ref().map_or("*".to_string(), |x| x.sql.clone())
                    ));
                }
            }
        }
        if !p.order.is_empty() {
            let o: Vec<String> = p
                .order
                .iter()
                .map(|(c, d)| format!("{}{}", p.names[*c], if *d { " DESC" } else { "" }))
                .collect();
            s.push_str(&format!("  order by {}\n", o.join(", ")));
        }
        if let Some(l) = p.limit {
            s.push_str(&format!("  limit {l} offset {}\n", p.offset));
        }
        let g = &self.compiled.gen;
        let shape = match &g.shape {
            codegen::Shape::Project => {
                "filter + projection, one fused loop; outputs written in place of the selected rows"
                    .to_string()
            }
            codegen::Shape::TopK { desc, .. } => format!(
                "filter + top-k heap ({}), then a gather of the projection for the chosen rows",
                if *desc {
                    "largest first"
                } else {
                    "smallest first"
                }
            ),
            codegen::Shape::Aggregate(gr) => format!("filter + aggregation, groups {gr:?}"),
        };
        s.push_str(&format!(
            "pipeline: {shape}; one breaker (the merge of per-worker states{})\n",
            if p.order.is_empty() {
                ""
            } else {
                ", then the sort"
            }
        ));
        s.push_str(&format!(
            "filter strategy: {}\n",
            if g.has_vec {
                "chosen per morsel from the previous morsel's selectivity: branch-free (tq_vec) between 5% and 95%, short-circuit (tq_main) outside"
            } else if p.filter.is_some() {
                "short-circuit only (an evaluation can fail, or a branch-free form does not apply)"
            } else {
                "no filter"
            }
        ));
        s.push_str(&format!(
            "compile: plan + codegen {:.1} ms, JIT {:.1} ms\n",
            self.plan_ms, self.compile_ms
        ));
        s.push_str("generated program:\n");
        s.push_str(&g.source);
        s.push_str("compiled after a run-time error only, to name the row:\n");
        s.push_str(&g.locate_source[g.locate_source.find("long tq_locate").unwrap_or(0)..]);
        s
    }

    /// Output column names.
    pub fn names(&self) -> &[String] {
        &self.plan.names[..self.plan.visible]
    }
}

/// A result as a text table.
pub fn format(b: &RecordBatch) -> String {
    arrow::util::pretty::pretty_format_batches(std::slice::from_ref(b))
        .map(|d| d.to_string())
        .unwrap_or_else(|e| e.to_string())
}

/// Writes a result to `path`: `.csv` or `.parquet`.
pub fn write(b: &RecordBatch, path: &Path) -> Result<()> {
    let err = |msg: String| QueryError::Write {
        path: path.display().to_string(),
        msg,
    };
    let f = std::fs::File::create(path).map_err(|e| err(e.to_string()))?;
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => {
            let mut w = arrow::csv::Writer::new(f);
            w.write(b).map_err(|e| err(e.to_string()))
        }
        Some("parquet") => {
            let mut w = parquet::arrow::ArrowWriter::try_new(f, b.schema(), None)
                .map_err(|e| err(e.to_string()))?;
            w.write(b).map_err(|e| err(e.to_string()))?;
            w.close().map(|_| ()).map_err(|e| err(e.to_string()))
        }
        _ => Err(err("the output is .csv or .parquet".into())),
    }
}
