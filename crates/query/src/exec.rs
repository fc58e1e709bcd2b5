//! Running a compiled pipeline: morsels of each batch on the runtime's pool, per-worker
//! state, the filter strategy chosen per morsel, merging, sorting, limits, and the result as
//! an Arrow record batch.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Float32Array, Float64Array, Int32Array, Int64Array,
    RecordBatch, StringArray, UInt32Array,
};
use arrow::datatypes::{DataType, Field, Schema};
use tessera_jit::{Args, CallError, Kernel};

use crate::codegen::{self, Generated, Groups, Shape};
use crate::error::{QueryError, Result};
use crate::plan::{AggFn, Body, GroupItem, Plan, TExpr};
use crate::table::{values, Table, Ty, Values};

/// Rows per morsel, by default: large enough that the per-call cost (argument checks) is
/// noise, small enough that two workers share a 10M-row table evenly.
pub const MORSEL: usize = 1 << 18;

/// What a run did, for `--explain` and logs.
#[derive(Clone, Debug, Default)]
pub struct RunLog {
    /// Morsels run with the short-circuit pipeline (`tq_main`).
    pub short_circuit: usize,
    /// Morsels run branch-free (`tq_vec`).
    pub branchless: usize,
    /// Rows in, rows that passed the filter.
    pub rows_in: u64,
    /// Rows that passed the filter.
    pub rows_selected: u64,
    /// Hash-table growths.
    pub grows: usize,
    /// Groups found.
    pub groups: usize,
    /// Milliseconds in the pipeline, in merging, in sorting.
    pub pipeline_ms: f64,
    /// Milliseconds merging per-worker states and building outputs.
    pub merge_ms: f64,
    /// Milliseconds sorting.
    pub sort_ms: f64,
    /// The per-morsel strategy decisions (first 16): (morsel, selectivity seen, chosen).
    pub decisions: Vec<(usize, f64, &'static str)>,
}

/// The compiled functions of a query.
pub struct Compiled {
    pub(crate) gen: Generated,
    pub(crate) main: Kernel,
    pub(crate) vec: Option<Kernel>,
    pub(crate) gather: Option<Kernel>,
    /// `tq_locate`, compiled at the first run-time error.
    pub(crate) locate: std::sync::OnceLock<std::result::Result<Kernel, String>>,
    /// The dictionary codes of the text group keys, made when the query is prepared.
    pub(crate) dicts: Dicts,
    /// The user functions' source lines (errors on lines beyond are in generated code).
    pub(crate) user_lines: usize,
    pub(crate) user_file: String,
}

#[derive(Clone, Copy)]
struct Morsel {
    batch: usize,
    lo: usize,
    hi: usize,
    /// Row number of `lo` in the table.
    base: u64,
}

fn morsels(table: &Table, size: usize) -> Vec<Morsel> {
    let size = size.max(1);
    let mut v = Vec::new();
    let mut base = 0u64;
    for (b, batch) in table.batches.iter().enumerate() {
        let n = batch.num_rows();
        let mut lo = 0;
        while lo < n {
            let hi = (lo + size).min(n);
            v.push(Morsel {
                batch: b,
                lo,
                hi,
                base: base + lo as u64,
            });
            lo = hi;
        }
        base += n as u64;
    }
    v
}

/// Adds the morsel's input columns (read-only, no copy) and dictionary codes to `args`.
fn inputs<'a>(
    mut args: Args<'a>,
    gen: &Generated,
    batch: &'a RecordBatch,
    dicts: &'a HashMap<usize, Vec<Vec<i64>>>,
    b: usize,
    lo: usize,
    hi: usize,
) -> Args<'a> {
    let n = hi - lo;
    for &c in &gen.cols {
        let name = format!("c{c}");
        args = match values(batch.column(c).as_ref()) {
            Values::I32(v) => args.array_ref(&name, &v[lo..hi], &[n]),
            Values::I64(v) => args.array_ref(&name, &v[lo..hi], &[n]),
            Values::F32(v) => args.array_ref(&name, &v[lo..hi], &[n]),
            Values::F64(v) => args.array_ref(&name, &v[lo..hi], &[n]),
        };
    }
    for &d in &gen.dicts {
        args = args.array_ref(&format!("d{d}"), &dicts[&d][b][lo..hi], &[n]);
    }
    args.scalar("n", n as i64)
}

/// `body` with `v` bound to the vector of whichever type `buf` holds.
macro_rules! each_buf {
    ($buf:expr, $v:ident => $body:expr) => {
        match $buf {
            Buf::I32($v) => $body,
            Buf::I64($v) => $body,
            Buf::F32($v) => $body,
            Buf::F64($v) => $body,
        }
    };
}

/// A typed output buffer.
#[derive(Clone, Debug)]
enum Buf {
    I32(Vec<i32>),
    I64(Vec<i64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Buf {
    fn new(ty: Ty, n: usize) -> Buf {
        match ty {
            Ty::Bool | Ty::I32 => Buf::I32(vec![0; n]),
            Ty::I64 => Buf::I64(vec![0; n]),
            Ty::F32 => Buf::F32(vec![0.0; n]),
            Ty::F64 => Buf::F64(vec![0.0; n]),
            Ty::Str => unreachable!("text is never computed"),
        }
    }
    fn arg<'a>(&'a mut self, args: Args<'a>, name: &str) -> Args<'a> {
        each_buf!(self, v => {
            let n = v.len();
            args.array(name, v, &[n])
        })
    }
    fn truncate(&mut self, k: usize) {
        each_buf!(self, v => v.truncate(k))
    }
    fn append(&mut self, o: &Buf) {
        match (self, o) {
            (Buf::I32(a), Buf::I32(b)) => a.extend_from_slice(b),
            (Buf::I64(a), Buf::I64(b)) => a.extend_from_slice(b),
            (Buf::F32(a), Buf::F32(b)) => a.extend_from_slice(b),
            (Buf::F64(a), Buf::F64(b)) => a.extend_from_slice(b),
            _ => unreachable!("buffers of one output have one type"),
        }
    }
    fn into_array(self, ty: Ty) -> ArrayRef {
        match (self, ty) {
            (Buf::I32(v), Ty::Bool) => Arc::new(BooleanArray::from(
                v.into_iter().map(|x| x != 0).collect::<Vec<_>>(),
            )),
            (Buf::I32(v), _) => Arc::new(Int32Array::from(v)),
            (Buf::I64(v), _) => Arc::new(Int64Array::from(v)),
            (Buf::F32(v), _) => Arc::new(Float32Array::from(v)),
            (Buf::F64(v), _) => Arc::new(Float64Array::from(v)),
        }
    }
}

/// Per-morsel results, or the first failing morsel and its error.
type MorselResults<R> = std::result::Result<Vec<R>, (usize, CallError)>;

/// A worker's state and its morsels' results.
type WorkerOut<S, R> = Mutex<Vec<(S, Vec<(usize, std::result::Result<R, CallError>)>)>>;

/// Runs `f` over every morsel on `threads` workers (the calling thread alone for one), each
/// with its own state from `init`. Returns the states and the per-morsel results in morsel
/// order, or the first error in morsel order among the morsels that ran.
#[allow(clippy::result_large_err)]
fn par_morsels<S: Send, R: Send>(
    rt: &tessera_runtime::Runtime,
    ms: &[Morsel],
    init: &(dyn Fn() -> S + Sync),
    f: &(dyn Fn(&mut S, usize, &Morsel) -> std::result::Result<R, CallError> + Sync),
) -> (Vec<S>, MorselResults<R>) {
    let threads = rt.threads().min(ms.len()).max(1);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let work = |out: &WorkerOut<S, R>| {
        let mut s = init();
        let mut res = Vec::new();
        while !failed.load(Ordering::Relaxed) {
            let m = next.fetch_add(1, Ordering::Relaxed);
            if m >= ms.len() {
                break;
            }
            let r = f(&mut s, m, &ms[m]);
            if r.is_err() {
                failed.store(true, Ordering::Relaxed);
            }
            res.push((m, r));
        }
        out.lock()
            .expect("no worker panics holding it")
            .push((s, res));
    };
    let out = Mutex::new(Vec::new());
    if threads == 1 {
        work(&out);
    } else {
        rt.install(|| {
            rayon::scope(|sc| {
                for _ in 0..threads {
                    sc.spawn(|_| work(&out));
                }
            })
        });
    }
    let mut states = Vec::new();
    let mut all = Vec::new();
    for (s, r) in out.into_inner().expect("workers finished") {
        states.push(s);
        all.extend(r);
    }
    all.sort_by_key(|(m, _)| *m);
    let mut rs = Vec::with_capacity(all.len());
    for (m, r) in all {
        match r {
            Ok(r) => rs.push(r),
            Err(e) => return (states, Err((m, e))),
        }
    }
    (states, Ok(rs))
}

impl Compiled {
    /// Turns a failed call into the query's error: a run-time error names the first row
    /// (in table order, up to the failing morsel) whose evaluation fails.
    fn fail(
        &self,
        table: &Table,
        dicts: &HashMap<usize, Vec<Vec<i64>>>,
        ms: &[Morsel],
        upto: usize,
        e: CallError,
    ) -> QueryError {
        if e.runtime().is_none() {
            return QueryError::Internal(e.to_string());
        }
        let locate = self.locate.get_or_init(|| {
            tessera_jit::Kernel::builder(&self.gen.locate_source, "tq_locate")
                .file_name(&self.user_file)
                .compile()
                .map_err(|e| e.to_string())
        });
        let locate = match locate {
            Ok(k) => k,
            Err(msg) => return QueryError::Internal(format!("compiling tq_locate: {msg}")),
        };
        for m in &ms[..=upto.min(ms.len().saturating_sub(1))] {
            let batch = &table.batches[m.batch];
            let mut at = [0i64];
            let args = inputs(Args::new(), &self.gen, batch, dicts, m.batch, m.lo, m.hi);
            let r = locate.call(&mut args.array("at", &mut at, &[1]));
            if let Err(CallError::Runtime(re)) = r {
                return QueryError::Row {
                    table: table.name.clone(),
                    row: m.base + at[0] as u64,
                    error: self.located(&re),
                };
            }
        }
        QueryError::Row {
            table: table.name.clone(),
            row: ms.get(upto).map_or(0, |m| m.base),
            error: e.to_string(),
        }
    }

    fn located(&self, e: &tessera_ir::RuntimeError) -> String {
        if (e.loc.line as usize) <= self.user_lines {
            format!(
                "{}:{}:{}: {} (in the user function `{}`)",
                self.user_file, e.loc.line, e.loc.col, e.kind, e.function
            )
        } else {
            format!("{} (in the query's expressions)", e.kind)
        }
    }
}

/// Dictionary codes of the text group keys: per column, per batch, a code per row; and
/// per column the texts by code.
pub(crate) type Dicts = (HashMap<usize, Vec<Vec<i64>>>, HashMap<usize, Vec<String>>);

pub(crate) fn dictionaries(table: &Table, cols: &[usize]) -> Dicts {
    let mut codes = HashMap::new();
    let mut texts = HashMap::new();
    for &c in cols {
        let mut ids: HashMap<String, i64> = HashMap::new();
        let mut words = Vec::new();
        let mut per_batch = Vec::new();
        for b in &table.batches {
            let a = b.column(c).as_string::<i32>();
            let mut v = Vec::with_capacity(a.len());
            for s in a.iter() {
                let s = s.unwrap_or("");
                let id = match ids.get(s) {
                    Some(&id) => id,
                    None => {
                        let id = words.len() as i64;
                        ids.insert(s.to_string(), id);
                        words.push(s.to_string());
                        id
                    }
                };
                v.push(id);
            }
            per_batch.push(v);
        }
        codes.insert(c, per_batch);
        texts.insert(c, words);
    }
    (codes, texts)
}

fn check_nulls(plan: &Plan, table: &Table) -> Result<()> {
    let mut used = std::collections::BTreeSet::new();
    let mut add = |t: &TExpr| used.extend(t.cols.iter().copied());
    if let Some(f) = &plan.filter {
        add(f);
    }
    match &plan.body {
        Body::Project(o) => o.iter().for_each(&mut add),
        Body::Aggregate { keys, aggs, .. } => {
            keys.iter().for_each(&mut add);
            aggs.iter()
                .filter_map(|a| a.arg.as_ref())
                .for_each(&mut add);
        }
    }
    for c in used {
        if table.batches.iter().any(|b| b.column(c).null_count() > 0) {
            return Err(QueryError::Data {
                path: table.name.clone(),
                msg: format!(
                    "column `{}` has NULLs, which queries do not support yet",
                    table.schema.field(c).name()
                ),
            });
        }
    }
    Ok(())
}

/// Chooses the pipeline's shape for `plan` over `table`.
pub(crate) fn shape(plan: &Plan, table: &Table) -> Shape {
    match &plan.body {
        Body::Project(outs) => {
            if let ([(key, desc)], Some(limit)) = (plan.order.as_slice(), plan.limit) {
                let k = limit.saturating_add(plan.offset);
                let t = outs[*key].ty;
                // Every selected row's outputs are evaluated (SQL evaluates the select list
                // before ORDER BY and LIMIT), so a projection that can fail is not deferred
                // to the chosen rows.
                if k <= 4096 && t.is_num() && !outs.iter().any(|o| o.can_fail) {
                    return Shape::TopK {
                        heap: if t.is_float() { Ty::F64 } else { Ty::I64 },
                        desc: *desc,
                        key: *key,
                    };
                }
            }
            Shape::Project
        }
        Body::Aggregate { keys, .. } => Shape::Aggregate(match keys.as_slice() {
            [] => Groups::Single,
            [k] if k.str_col.is_none() => match dense_range(k, table) {
                Some((lo, n)) => Groups::Dense(lo, n),
                None => Groups::Hash,
            },
            _ => Groups::Hash,
        }),
    }
}

/// For a key that is one integer column: its range `(min, count)` if small enough for
/// dense arrays.
fn dense_range(k: &TExpr, table: &Table) -> Option<(i64, usize)> {
    let col = k.cols.iter().next().copied()?;
    if k.cols.len() != 1 || k.c != format!("c{col}[i]") || !k.ty.is_int() {
        return None;
    }
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    for b in &table.batches {
        let a = b.column(col);
        let (l, h) = match values(a.as_ref()) {
            Values::I32(v) => (
                v.iter().copied().min().map(i64::from),
                v.iter().copied().max().map(i64::from),
            ),
            Values::I64(v) => (v.iter().copied().min(), v.iter().copied().max()),
            _ => return None,
        };
        if let (Some(l), Some(h)) = (l, h) {
            lo = lo.min(l);
            hi = hi.max(h);
        }
    }
    if lo > hi {
        return Some((0, 1));
    }
    let range = (hi as i128 - lo as i128 + 1) as u128;
    let rows = table.rows() as u128;
    (range <= (1 << 22) && range <= 2 * rows + 4096).then_some((lo, range as usize))
}

/// Runs `plan` compiled as `c` over `table` on `rt`'s workers.
pub(crate) fn run(
    plan: &Plan,
    c: &Compiled,
    table: &Table,
    rt: &tessera_runtime::Runtime,
    morsel_rows: usize,
    log: &mut RunLog,
) -> Result<RecordBatch> {
    check_nulls(plan, table)?;
    let ms = morsels(table, morsel_rows);
    log.rows_in = table.rows() as u64;
    let (codes, texts) = &c.dicts;
    let t0 = Instant::now();
    let (mut cols, names): (Vec<ArrayRef>, Vec<String>) = match (&plan.body, &c.gen.shape) {
        (Body::Project(outs), Shape::Project) => {
            project(plan, c, table, rt, &ms, codes, outs, log)?
        }
        (Body::Project(outs), Shape::TopK { heap, desc, key }) => topk(
            plan,
            c,
            table,
            rt,
            &ms,
            codes,
            outs,
            (*heap, *desc, *key),
            log,
        )?,
        (Body::Aggregate { keys, aggs, items }, Shape::Aggregate(g)) => aggregate(
            c, table, rt, &ms, codes, texts, keys, aggs, items, *g, plan, log,
        )?,
        _ => unreachable!("the shape matches the body"),
    };
    log.pipeline_ms = t0.elapsed().as_secs_f64() * 1e3 - log.merge_ms;
    // ORDER BY (top-k is sorted already), OFFSET, LIMIT.
    let t1 = Instant::now();
    let n = cols.first().map_or(0, |a| a.len());
    let mut idx: Option<Vec<u32>> = None;
    if !plan.order.is_empty() && !matches!(c.gen.shape, Shape::TopK { .. }) {
        // Only the key is shown: sort its values; no permutation, no gather.
        let key_only = match (plan.order.as_slice(), plan.visible) {
            ([(0, desc)], 1) => crate::sort::sort_values32(cols[0].as_ref(), *desc),
            _ => None,
        };
        match key_only {
            Some(sorted) => cols[0] = sorted,
            None => idx = Some(crate::sort::sort_indices(&cols, &plan.order, n)),
        }
    }

    let lo = (plan.offset as usize).min(n);
    let hi = plan
        .limit
        .map_or(n, |l| lo.saturating_add(l as usize).min(n));
    if idx.is_some() || lo > 0 || hi < n {
        let ix: Vec<u32> = match idx {
            Some(v) => v[lo..hi].to_vec(),
            None => (lo as u32..hi as u32).collect(),
        };
        let ix = UInt32Array::from(ix);
        cols = cols
            .iter()
            .map(|a| arrow::compute::take(a.as_ref(), &ix, None).expect("indices in range"))
            .collect();
    }
    log.sort_ms = t1.elapsed().as_secs_f64() * 1e3;
    cols.truncate(plan.visible);
    let fields: Vec<Field> = cols
        .iter()
        .zip(&names)
        .map(|(a, n)| Field::new(n, a.data_type().clone(), a.null_count() > 0))
        .collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
        .map_err(|e| QueryError::Internal(e.to_string()))
}

#[allow(clippy::too_many_arguments, clippy::result_large_err)]
fn project(
    plan: &Plan,
    c: &Compiled,
    table: &Table,
    rt: &tessera_runtime::Runtime,
    ms: &[Morsel],
    codes: &HashMap<usize, Vec<Vec<i64>>>,
    outs: &[TExpr],
    log: &mut RunLog,
) -> Result<(Vec<ArrayRef>, Vec<String>)> {
    // No filter and every output a column as it is: the result is the table's columns
    // (shared, not copied); nothing to run.
    let bare = |o: &TExpr| {
        o.str_col.is_some()
            || o.cols.len() == 1 && o.c == format!("c{}[i]", o.cols.first().expect("one column"))
    };
    if plan.filter.is_none() && outs.iter().all(bare) {
        let t = Instant::now();
        let cols = outs
            .iter()
            .map(|o| {
                let c = *o.cols.first().expect("one column");
                let parts: Vec<ArrayRef> =
                    table.batches.iter().map(|b| b.column(c).clone()).collect();
                match parts.len() {
                    1 => parts.into_iter().next().expect("one part"),
                    _ => concat(parts, table.schema.field(c).data_type().clone()),
                }
            })
            .collect();
        log.rows_selected = table.rows() as u64;
        log.merge_ms = t.elapsed().as_secs_f64() * 1e3;
        return Ok((cols, plan.names.clone()));
    }
    struct W {
        last_sel: Option<f64>,
        sc: usize,
        bl: usize,
        decisions: Vec<(usize, f64, &'static str)>,
    }
    let init = || W {
        last_sel: None,
        sc: 0,
        bl: 0,
        decisions: Vec::new(),
    };
    let f = |w: &mut W, mi: usize, m: &Morsel| {
        let n = m.hi - m.lo;
        let mut bufs: Vec<Option<Buf>> = outs
            .iter()
            .map(|o| o.str_col.is_none().then(|| Buf::new(o.ty, n)))
            .collect();
        let needs_sel = outs.iter().any(|o| o.str_col.is_some());
        let mut sel = vec![0i64; if needs_sel { n } else { 0 }];
        let batch = &table.batches[m.batch];
        // Branch-free where the last morsel's selectivity makes the branch unpredictable.
        let use_vec = match (w.last_sel, &c.vec) {
            (Some(s), Some(_)) => s > 0.05 && s < 0.95,
            _ => false,
        };
        let k = {
            let mut args = inputs(Args::new(), &c.gen, batch, codes, m.batch, m.lo, m.hi);
            for (j, b) in bufs.iter_mut().enumerate() {
                if let Some(b) = b {
                    args = b.arg(args, &format!("o{j}"));
                }
            }
            let mut args = if needs_sel {
                args.array("sel", &mut sel, &[n])
            } else {
                args
            };
            let kern = if use_vec {
                c.vec.as_ref().unwrap_or(&c.main)
            } else {
                &c.main
            };
            kern.call(&mut args)?
        };
        let k = match k {
            Some(tessera_ir::Scalar::I64(k)) => k as usize,
            _ => n,
        };
        if use_vec {
            w.bl += 1;
        } else {
            w.sc += 1;
        }
        let s = if n > 0 { k as f64 / n as f64 } else { 0.0 };
        if w.decisions.len() < 4 {
            w.decisions.push((
                mi,
                w.last_sel.unwrap_or(f64::NAN),
                if use_vec {
                    "branch-free"
                } else {
                    "short-circuit"
                },
            ));
        }
        w.last_sel = Some(s);
        for b in bufs.iter_mut().flatten() {
            b.truncate(k);
        }
        sel.truncate(k);
        Ok((bufs, sel, k))
    };
    let (states, res) = par_morsels(rt, ms, &init, &f);
    for w in &states {
        log.short_circuit += w.sc;
        log.branchless += w.bl;
        log.decisions.extend(w.decisions.iter().copied());
    }
    log.decisions.sort_by_key(|d| d.0);
    log.decisions.truncate(16);
    let res = res.map_err(|(m, e)| c.fail(table, codes, ms, m, e))?;
    let t = Instant::now();
    let mut cols = Vec::new();
    for (j, o) in outs.iter().enumerate() {
        if let Some(sc) = o.str_col {
            let mut parts: Vec<ArrayRef> = Vec::new();
            for ((_, sel, _), m) in res.iter().zip(ms) {
                let ix = UInt32Array::from(
                    sel.iter()
                        .map(|&i| (m.lo as i64 + i) as u32)
                        .collect::<Vec<_>>(),
                );
                parts.push(
                    arrow::compute::take(table.batches[m.batch].column(sc).as_ref(), &ix, None)
                        .expect("indices in range"),
                );
            }
            cols.push(concat(parts, DataType::Utf8));
        } else {
            let mut all = Buf::new(o.ty, 0);
            for (bufs, _, _) in &res {
                all.append(bufs[j].as_ref().expect("a numeric output"));
            }
            cols.push(all.into_array(o.ty));
        }
    }
    log.rows_selected = res.iter().map(|(_, _, k)| *k as u64).sum();
    log.merge_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((cols, plan.names.clone()))
}

fn concat(parts: Vec<ArrayRef>, ty: DataType) -> ArrayRef {
    if parts.is_empty() {
        return arrow::array::new_empty_array(&ty);
    }
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    arrow::compute::concat(&refs).expect("parts of one type")
}

#[allow(clippy::too_many_arguments, clippy::result_large_err)]
fn topk(
    plan: &Plan,
    c: &Compiled,
    table: &Table,
    rt: &tessera_runtime::Runtime,
    ms: &[Morsel],
    codes: &HashMap<usize, Vec<Vec<i64>>>,
    outs: &[TExpr],
    (heap, desc, _key): (Ty, bool, usize),
    log: &mut RunLog,
) -> Result<(Vec<ArrayRef>, Vec<String>)> {
    let k = plan.limit.unwrap_or(0).saturating_add(plan.offset) as usize;
    struct H {
        hv: Buf,
        hr: Vec<i64>,
        hn: [i64; 1],
    }
    let init = || H {
        hv: Buf::new(heap, k),
        hr: vec![0; k],
        hn: [0],
    };
    let f = |h: &mut H, _mi: usize, m: &Morsel| {
        if k == 0 {
            return Ok(());
        }
        let batch = &table.batches[m.batch];
        let args = inputs(Args::new(), &c.gen, batch, codes, m.batch, m.lo, m.hi)
            .scalar("base", m.base as i64)
            .scalar("k", k as i64);
        let args = h.hv.arg(args, "hv");
        let mut args = args
            .array("hr", &mut h.hr, &[k])
            .array("hn", &mut h.hn, &[1]);
        c.main.call(&mut args)?;
        Ok(())
    };
    let (states, res) = par_morsels(rt, ms, &init, &f);
    res.map_err(|(m, e)| c.fail(table, codes, ms, m, e))?;
    log.short_circuit = ms.len();
    let t = Instant::now();
    // The best k of all heaps, ties by row.
    let mut cand: Vec<(f64, i64, i64)> = Vec::new();
    for h in &states {
        for j in 0..h.hn[0] as usize {
            let (f, i) = match &h.hv {
                Buf::F64(v) => (v[j], 0),
                Buf::I64(v) => (0.0, v[j]),
                _ => unreachable!("heaps are double or long"),
            };
            cand.push((f, i, h.hr[j]));
        }
    }
    cand.sort_by(|a, b| {
        let o = a.0.total_cmp(&b.0).then(a.1.cmp(&b.1));
        let o = if desc { o.reverse() } else { o };
        o.then(a.2.cmp(&b.2))
    });
    let lo = (plan.offset as usize).min(cand.len());
    let rows: Vec<i64> = cand[lo..].iter().map(|x| x.2).collect();
    // Gather per batch, in the final order.
    let gather = c.gather.as_ref().expect("top-k has a gather");
    let mut offs = Vec::new();
    let mut acc = 0i64;
    for b in &table.batches {
        offs.push(acc);
        acc += b.num_rows() as i64;
    }
    let mut cols_out: Vec<Buf> = outs
        .iter()
        .filter(|o| o.str_col.is_none())
        .map(|o| Buf::new(o.ty, 0))
        .collect();
    let mut str_parts: Vec<Vec<ArrayRef>> = vec![Vec::new(); outs.len()];
    // Rows stay in final order: gather run by run of one batch.
    let mut s = 0;
    while s < rows.len() {
        let b = offs.partition_point(|&o| o <= rows[s]) - 1;
        let mut e = s;
        while e < rows.len() && offs.partition_point(|&o| o <= rows[e]) - 1 == b {
            e += 1;
        }
        let local: Vec<i64> = rows[s..e].iter().map(|r| r - offs[b]).collect();
        let m = local.len();
        let batch = &table.batches[b];
        let mut bufs: Vec<Buf> = outs
            .iter()
            .filter(|o| o.str_col.is_none())
            .map(|o| Buf::new(o.ty, m))
            .collect();
        {
            let n = batch.num_rows();
            let mut args = inputs(Args::new(), &c.gen, batch, codes, b, 0, n)
                .scalar("m", m as i64)
                .array_ref("rows", &local, &[m]);
            let numeric = outs
                .iter()
                .enumerate()
                .filter(|(_, o)| o.str_col.is_none())
                .map(|(oi, _)| oi);
            for (b, oi) in bufs.iter_mut().zip(numeric) {
                args = b.arg(args, &format!("o{oi}"));
            }
            gather
                .call(&mut args)
                .map_err(|e| c.fail(table, codes, ms, ms.len().saturating_sub(1), e))?;
        }
        for (dst, src) in cols_out.iter_mut().zip(&bufs) {
            dst.append(src);
        }
        for (oi, o) in outs.iter().enumerate() {
            if let Some(sc) = o.str_col {
                let ix = UInt32Array::from(local.iter().map(|&i| i as u32).collect::<Vec<_>>());
                str_parts[oi].push(
                    arrow::compute::take(batch.column(sc).as_ref(), &ix, None)
                        .expect("indices in range"),
                );
            }
        }
        s = e;
    }
    let mut cols = Vec::new();
    let mut it = cols_out.into_iter();
    for (oi, o) in outs.iter().enumerate() {
        if o.str_col.is_some() {
            cols.push(concat(std::mem::take(&mut str_parts[oi]), DataType::Utf8));
        } else {
            cols.push(
                it.next()
                    .expect("one buffer per numeric output")
                    .into_array(o.ty),
            );
        }
    }
    log.rows_selected = rows.len() as u64;
    log.merge_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((cols, plan.names.clone()))
}

/// Per-worker aggregation state: `nk` slots of group counts, keys (hash) and states.
struct AggState {
    nk: usize,
    fill: [i64; 1],
    keys: Vec<Vec<i64>>,
    cnt: Vec<i64>,
    st: Vec<Buf>,
    grows: usize,
}

/// `n` slots of aggregate `a`'s state, each its identity (a group with no rows yet).
fn identity(a: &crate::plan::Agg, n: usize) -> Buf {
    match codegen::state_ty(a.f, a.arg.as_ref()) {
        Ty::F64 => Buf::F64(vec![
            match a.f {
                AggFn::Min => f64::INFINITY,
                AggFn::Max => f64::NEG_INFINITY,
                _ => 0.0,
            };
            n
        ]),
        _ => Buf::I64(vec![
            match a.f {
                AggFn::Min => i64::MAX,
                AggFn::Max => i64::MIN,
                _ => 0,
            };
            n
        ]),
    }
}

impl AggState {
    fn new(aggs: &[crate::plan::Agg], nkeys: usize, nk: usize) -> AggState {
        AggState {
            nk,
            fill: [0],
            keys: vec![vec![0; nk]; nkeys],
            cnt: vec![0; nk],
            st: aggs.iter().map(|a| identity(a, nk)).collect(),
            grows: 0,
        }
    }

    /// Doubles a hash table, re-inserting its groups where the generated code looks.
    fn grow(&mut self, aggs: &[crate::plan::Agg]) {
        let mut g = AggState::new(aggs, self.keys.len(), self.nk * 2);
        g.grows = self.grows + 1;
        let mask = (g.nk - 1) as i64;
        let mut kt = vec![0i64; self.keys.len()];
        for s in 0..self.nk {
            if self.cnt[s] == 0 {
                continue;
            }
            for (j, k) in self.keys.iter().enumerate() {
                kt[j] = k[s];
            }
            let mut h = codegen::hash(&kt) & mask;
            while g.cnt[h as usize] != 0 {
                h = (h + 1) & mask;
            }
            let h = h as usize;
            for (j, k) in g.keys.iter_mut().enumerate() {
                k[h] = kt[j];
            }
            g.cnt[h] = self.cnt[s];
            for (dst, src) in g.st.iter_mut().zip(&self.st) {
                match (dst, src) {
                    (Buf::I64(d), Buf::I64(x)) => d[h] = x[s],
                    (Buf::F64(d), Buf::F64(x)) => d[h] = x[s],
                    _ => unreachable!("states keep their type"),
                }
            }
        }
        g.fill = self.fill;
        *self = g;
    }
}

#[allow(clippy::too_many_arguments, clippy::result_large_err)]
fn aggregate(
    c: &Compiled,
    table: &Table,
    rt: &tessera_runtime::Runtime,
    ms: &[Morsel],
    codes: &HashMap<usize, Vec<Vec<i64>>>,
    texts: &HashMap<usize, Vec<String>>,
    keys: &[TExpr],
    aggs: &[crate::plan::Agg],
    items: &[GroupItem],
    groups: Groups,
    plan: &Plan,
    log: &mut RunLog,
) -> Result<(Vec<ArrayRef>, Vec<String>)> {
    let (kmin, nk0) = match groups {
        Groups::Single => (0, 1),
        Groups::Dense(lo, n) => (lo, n),
        Groups::Hash => (0, 1024),
    };
    struct W {
        st: AggState,
        last_sel: Option<f64>,
        sc: usize,
        bl: usize,
    }
    let init = || W {
        st: AggState::new(
            aggs,
            if groups == Groups::Hash {
                keys.len()
            } else {
                0
            },
            nk0,
        ),
        last_sel: None,
        sc: 0,
        bl: 0,
    };
    let f = |w: &mut W, _mi: usize, m: &Morsel| {
        let batch = &table.batches[m.batch];
        let mut lo = m.lo;
        loop {
            let st = &mut w.st;
            let nk = st.nk;
            let before = st.cnt.first().copied().unwrap_or(0);
            let use_vec = match (w.last_sel, &c.vec) {
                (Some(s), Some(_)) => s > 0.05 && s < 0.95,
                _ => false,
            };
            let mut args = inputs(Args::new(), &c.gen, batch, codes, m.batch, lo, m.hi)
                .scalar("nk", nk as i64);
            if matches!(groups, Groups::Dense(..)) {
                args = args.scalar("kmin", kmin);
            }
            if groups == Groups::Hash {
                args = args.array("fill", &mut st.fill, &[1]);
                for (j, k) in st.keys.iter_mut().enumerate() {
                    args = args.array(&format!("hk{j}"), k, &[nk]);
                }
            }
            args = args.array("cnt", &mut st.cnt, &[nk]);
            for (a, b) in st.st.iter_mut().enumerate() {
                args = b.arg(args, &format!("s{a}"));
            }
            let kern = if use_vec {
                c.vec.as_ref().unwrap_or(&c.main)
            } else {
                &c.main
            };
            let r = kern.call(&mut args)?;
            if use_vec {
                w.bl += 1;
            } else {
                w.sc += 1;
            }
            if groups == Groups::Single {
                let n = (m.hi - lo).max(1);
                w.last_sel = Some((w.st.cnt[0] - before) as f64 / n as f64);
            }
            let done = match r {
                Some(tessera_ir::Scalar::I64(r)) => r as usize,
                _ => m.hi - lo,
            };
            if lo + done >= m.hi {
                return Ok(());
            }
            lo += done;
            w.st.grow(aggs);
        }
    };
    let (states, res) = par_morsels(rt, ms, &init, &f);
    for w in &states {
        log.short_circuit += w.sc;
        log.branchless += w.bl;
        log.grows += w.st.grows;
    }
    res.map_err(|(m, e)| c.fail(table, codes, ms, m, e))?;
    let t = Instant::now();
    // Merge the workers' states. One group or dense arrays: slot by slot, then the empty
    // slots dropped; a hash table: by key tuple.
    let mut gkeys: Vec<Vec<i64>> = Vec::new();
    let mut cnt: Vec<i64> = Vec::new();
    let mut st: Vec<Buf>;
    if groups == Groups::Hash {
        let mut index: HashMap<Vec<i64>, usize> =
            HashMap::with_capacity(states.first().map_or(0, |w| w.st.fill[0] as usize));
        st = aggs.iter().map(|a| identity(a, 0)).collect();
        for w in &states {
            let s = &w.st;
            for slot in (0..s.nk).filter(|&slot| s.cnt[slot] != 0) {
                let key: Vec<i64> = s.keys.iter().map(|k| k[slot]).collect();
                let g = *index.entry(key.clone()).or_insert_with(|| {
                    gkeys.push(key);
                    cnt.push(0);
                    for (b, a) in st.iter_mut().zip(aggs) {
                        b.append(&identity(a, 1));
                    }
                    cnt.len() - 1
                });
                cnt[g] += s.cnt[slot];
                for ((b, src), a) in st.iter_mut().zip(&s.st).zip(aggs) {
                    b.combine(a.f, g, src, slot);
                }
            }
        }
    } else {
        let mut it = states.iter();
        let first = &it.next().expect("at least one worker").st;
        cnt = first.cnt.clone();
        st = first.st.clone();
        for w in it {
            for (c, x) in cnt.iter_mut().zip(&w.st.cnt) {
                *c += x;
            }
            for ((b, src), a) in st.iter_mut().zip(&w.st.st).zip(aggs) {
                for slot in 0..nk0 {
                    b.combine(a.f, slot, src, slot);
                }
            }
        }
        if groups == Groups::Single {
            gkeys.push(vec![]);
        } else {
            let keep: Vec<usize> = (0..nk0).filter(|&g| cnt[g] != 0).collect();
            gkeys = keep.iter().map(|&g| vec![kmin + g as i64]).collect();
            cnt = keep.iter().map(|&g| cnt[g]).collect();
            for b in &mut st {
                *b = match b {
                    Buf::I64(v) => Buf::I64(keep.iter().map(|&g| v[g]).collect()),
                    Buf::F64(v) => Buf::F64(keep.iter().map(|&g| v[g]).collect()),
                    _ => unreachable!("states are long or double"),
                };
            }
        }
    }
    log.groups = cnt.len();
    log.rows_selected = cnt.iter().map(|&c| c as u64).sum();
    // Outputs.
    let mut cols: Vec<ArrayRef> = Vec::new();
    for it in items {
        match *it {
            GroupItem::Key(k) => {
                let key = &keys[k];
                let j = k;
                let vals = gkeys.iter().map(|g| g[j]);
                let a: ArrayRef = match key.str_col {
                    Some(sc) => Arc::new(StringArray::from(
                        vals.map(|v| texts[&sc][v as usize].clone())
                            .collect::<Vec<_>>(),
                    )),
                    None if key.ty == Ty::I64 => {
                        Arc::new(Int64Array::from(vals.collect::<Vec<_>>()))
                    }
                    None => Arc::new(Int32Array::from(vals.map(|v| v as i32).collect::<Vec<_>>())),
                };
                cols.push(a);
            }
            GroupItem::Agg(a) => {
                let ag = &aggs[a];
                let empty = |g: usize| cnt[g] == 0;
                let arr: ArrayRef = match (ag.f, &st[a]) {
                    (AggFn::Count, _) => Arc::new(Int64Array::from(cnt.clone())),
                    (AggFn::Avg, Buf::F64(v)) => Arc::new(Float64Array::from(
                        (0..cnt.len())
                            .map(|g| (!empty(g)).then(|| v[g] / cnt[g] as f64))
                            .collect::<Vec<_>>(),
                    )),
                    (_, Buf::F64(v)) => Arc::new(Float64Array::from(
                        (0..cnt.len())
                            .map(|g| (!empty(g)).then_some(v[g]))
                            .collect::<Vec<_>>(),
                    )),
                    (_, Buf::I64(v)) => Arc::new(Int64Array::from(
                        (0..cnt.len())
                            .map(|g| (!empty(g)).then_some(v[g]))
                            .collect::<Vec<_>>(),
                    )),
                    _ => unreachable!("states are long or double"),
                };
                cols.push(arr);
            }
        }
    }
    log.merge_ms = t.elapsed().as_secs_f64() * 1e3;
    Ok((cols, plan.names.clone()))
}

impl Buf {
    /// Combines slot `s` of state `src` into slot `g` of this one, for aggregate `f`.
    fn combine(&mut self, f: AggFn, g: usize, src: &Buf, s: usize) {
        match (self, src) {
            (Buf::I64(d), Buf::I64(x)) => {
                d[g] = match f {
                    AggFn::Min => d[g].min(x[s]),
                    AggFn::Max => d[g].max(x[s]),
                    _ => d[g].wrapping_add(x[s]),
                }
            }
            (Buf::F64(d), Buf::F64(x)) => {
                d[g] = match f {
                    AggFn::Min => d[g].min(x[s]),
                    AggFn::Max => d[g].max(x[s]),
                    _ => d[g] + x[s],
                }
            }
            _ => unreachable!("states keep their type"),
        }
    }
}
