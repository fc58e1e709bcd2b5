//! A plan → one kernel-language program: the user functions' source followed by the
//! query's pipeline functions, compiled together by the JIT (so LLVM inlines the user
//! functions into the row loop, and every access, division and shift is guarded as in any
//! kernel).
//!
//! Each pipeline runs over one morsel: `n` rows, the columns it reads as read-only arrays
//! `cJ[n]` (text group keys as their dictionary codes `dJ[n]`), row `i`:
//!
//! | function | what |
//! |---|---|
//! | `tq_main` | the pipeline, short-circuit: filter, then the projection (writes the selected rows' outputs and their row numbers `sel`), the aggregation's update (one group; a dense array indexed by the key; an open-addressing hash table that returns early when it must grow), or a top-k heap |
//! | `tq_vec` | the same without branches on the filter (outputs written on every row, the count advanced by the condition), where nothing in it can fail |
//! | `tq_gather` | top-k: the projection of the chosen rows |
//! | `tq_locate` | after a run-time error (a program of its own, compiled then): the same evaluations, row by row, recording the row, so that the error names it |

use std::fmt::Write;

use crate::plan::{AggFn, Body, Plan, TExpr};
use crate::table::{Table, Ty};

/// The hash multiplier of the group tables (the golden ratio, 64 bits); `hash` in Rust
/// must compute exactly what the generated code computes.
pub const HASH_MUL: i64 = 0x9E37_79B9_7F4A_7C15_u64 as i64;

/// The hash of a group key tuple, as the generated code computes it (before the mask).
pub fn hash(keys: &[i64]) -> i64 {
    let mut h: i64 = 0;
    for &k in keys {
        h = (h ^ k).wrapping_mul(HASH_MUL);
    }
    h ^ (h >> 31)
}

/// How an aggregation keeps its groups.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Groups {
    /// No GROUP BY: one group, in locals of the loop.
    Single,
    /// One integer key with a small range: arrays indexed by `key - kmin`; the key's
    /// minimum and the range's size (found when the query is prepared).
    Dense(i64, usize),
    /// A hash table (open addressing, linear probing, grown by the caller).
    Hash,
}

/// The pipeline's shape.
#[derive(Clone, Debug)]
pub enum Shape {
    /// Filter + projection; outputs of the given types.
    Project,
    /// Filter + top-k on one key (`desc`), then a gather of the projection.
    TopK {
        /// The key's type in the heap.
        heap: Ty,
        /// Largest first.
        desc: bool,
        /// Index of the key among the outputs.
        key: usize,
    },
    /// Filter + aggregation.
    Aggregate(Groups),
}

/// The line that starts the generated part of a program.
const PIPELINE: &str = "/* ---- the query's pipeline (generated) ---- */\n";

/// The generated program and what its functions take.
#[derive(Clone, Debug)]
pub struct Generated {
    /// The whole program (user functions first).
    pub source: String,
    /// The user functions and `tq_locate`, compiled after a run-time error only.
    pub locate_source: String,
    /// Numeric columns passed as `cJ`.
    pub cols: Vec<usize>,
    /// Text key columns passed as `dJ` (dictionary codes).
    pub dicts: Vec<usize>,
    /// Whether `tq_vec` exists.
    pub has_vec: bool,
    /// The shape.
    pub shape: Shape,
}

/// The state kept per aggregate: `double` for floating-point sums, min, max and every
/// average; `long` otherwise.
pub fn state_ty(f: AggFn, arg: Option<&TExpr>) -> Ty {
    match (f, arg) {
        (AggFn::Avg, _) => Ty::F64,
        (AggFn::Count, _) => Ty::I64,
        (_, Some(a)) if a.ty.is_float() => Ty::F64,
        _ => Ty::I64,
    }
}

fn key_text(t: &TExpr) -> String {
    match t.str_col {
        Some(c) => format!("d{c}[i]"),
        None => format!("(long)({})", t.c),
    }
}

/// Generates the program for `plan` with `shape` after `user_src`.
pub fn generate(plan: &Plan, table: &Table, shape: Shape, user_src: &str) -> Generated {
    let mut cols = std::collections::BTreeSet::new();
    let mut dicts = std::collections::BTreeSet::new();
    let mut exprs: Vec<&TExpr> = Vec::new();
    if let Some(f) = &plan.filter {
        exprs.push(f);
    }
    match &plan.body {
        Body::Project(outs) => exprs.extend(outs.iter()),
        Body::Aggregate { keys, aggs, .. } => {
            exprs.extend(keys.iter());
            exprs.extend(aggs.iter().filter_map(|a| a.arg.as_ref()));
        }
    }
    for e in &exprs {
        match (e.str_col, &plan.body) {
            (Some(c), Body::Aggregate { .. }) => {
                dicts.insert(c);
            }
            (Some(_), Body::Project(_)) => {}
            (None, _) => cols.extend(e.cols.iter().copied()),
        }
    }
    let cols: Vec<usize> = cols.into_iter().collect();
    let dicts: Vec<usize> = dicts.into_iter().collect();
    let mut params = String::new();
    for c in &cols {
        let _ = write!(params, ", const {} c{c}[n]", table.ty(*c).c());
    }
    for d in &dicts {
        let _ = write!(params, ", const long d{d}[n]");
    }
    let filter = plan.filter.as_ref().map(|f| f.c.clone());
    let filter_b = plan.filter.as_ref().map(|f| f.cb.clone());
    let mut s = String::new();
    s.push_str(user_src);
    if !user_src.ends_with('\n') && !user_src.is_empty() {
        s.push('\n');
    }
    s.push_str("#include <math.h>\n");
    s.push_str(PIPELINE);
    let guarded = |s: &mut String, body: &str| match &filter {
        Some(f) => {
            let _ = writeln!(s, "    if ({f}) {{\n{body}    }}");
        }
        None => s.push_str(body),
    };
    let mut has_vec = false;
    match (&plan.body, &shape) {
        (Body::Project(outs), Shape::Project) => {
            let mut op = String::new();
            for (k, o) in outs.iter().enumerate() {
                if o.str_col.is_none() {
                    let _ = write!(op, ", {} o{k}[n]", o.ty.c());
                }
            }
            // Row numbers of the selected rows, for text outputs (taken afterwards).
            let needs_sel = outs.iter().any(|o| o.str_col.is_some());
            let (sel_param, sel_store) = if needs_sel {
                (", long sel[n]", "sel[k] = i;")
            } else {
                ("", "")
            };
            let _ = writeln!(
                s,
                "long tq_main(long n{params}{op}{sel_param}) {{\n  long k = 0;\n  for (long i = 0; i < n; i++) {{"
            );
            let mut body = String::new();
            for (k, o) in outs.iter().enumerate() {
                if o.str_col.is_none() {
                    let _ = writeln!(body, "      o{k}[k] = {};", o.c);
                }
            }
            let _ = writeln!(body, "      {sel_store}\n      k++;");
            guarded(&mut s, &body);
            s.push_str("  }\n  return k;\n}\n");
            let can_fail = exprs.iter().any(|e| e.can_fail);
            if let (Some(fb), false) = (&filter_b, can_fail) {
                has_vec = true;
                let _ = writeln!(
                    s,
                    "long tq_vec(long n{params}{op}{sel_param}) {{\n  long k = 0;\n  for (long i = 0; i < n; i++) {{\n    long p = ({fb}) != 0;"
                );
                for (k, o) in outs.iter().enumerate() {
                    if o.str_col.is_none() {
                        let _ = writeln!(s, "    o{k}[k] = {};", o.cb);
                    }
                }
                let _ = writeln!(s, "    {sel_store}\n    k += p;\n  }}\n  return k;\n}}");
            }
        }
        (Body::Project(outs), Shape::TopK { heap, desc, key }) => {
            let ht = heap.c();
            let worse = |a: &str, b: &str| {
                if *desc {
                    format!("({a} < {b})")
                } else {
                    format!("({a} > {b})")
                }
            };
            // Fill the heap; then, where nothing can fail, test blocks of 8 rows against the
            // heap's root without branches (vectorised) and look at a block's rows only
            // when one beats it; the rest row by row.
            let key_c = &outs[*key].c;
            let key_b = &outs[*key].cb;
            let insert = format!(
                "{ht} v = ({ht})({key_c});
      long j = m;
      m++;
      while (j > 0) {{
        long p = (j - 1) / 2;
        if (!{wvp}) break;
        hv[j] = hv[p];
        hr[j] = hr[p];
        j = p;
      }}
      hv[j] = v;
      hr[j] = base + i;
",
                wvp = worse("v", "hv[p]"),
            );
            let replace = format!(
                "{ht} v = ({ht})({key_c});
      if ({w0v}) {{
        long j = 0;
        while (1) {{
          long c = 2 * j + 1;
          if (c >= k) break;
          if (c + 1 < k && {wc1c}) c = c + 1;
          if (!{wcv}) break;
          hv[j] = hv[c];
          hr[j] = hr[c];
          j = c;
        }}
        hv[j] = v;
        hr[j] = base + i;
      }}
",
                w0v = worse("hv[0]", "v"),
                wc1c = worse("hv[c + 1]", "hv[c]"),
                wcv = worse("hv[c]", "v"),
            );
            let cond = |body: &str| match &filter {
                Some(f) => format!("    if ({f}) {{\n      {body}    }}\n"),
                None => format!("    {{\n      {body}    }}\n"),
            };
            let _ = writeln!(
                s,
                "long tq_main(long n, long base, long k{params}, {ht} hv[k], long hr[k], long hn[1]) {{\n  long m = hn[0];\n  long b = 0;\n  while (b < n && m < k) {{\n    long i = b;"
            );
            s.push_str(&cond(&insert));
            s.push_str("    b++;\n  }\n  if (k > 0) {\n");
            if !plan.filter.as_ref().is_some_and(|f| f.can_fail) {
                // Blocks of 8 rows (one AVX-512 vector of doubles) tested at once (a shorter last block is visited row by
                // row): one copy of the heap code.
                let beats = worse("t", &format!("({ht})({key_b})"));
                let test = match &filter_b {
                    Some(fb) => format!("(({fb}) != 0) & {beats}"),
                    None => beats,
                };
                let _ = writeln!(
                    s,
                    "  while (b < n) {{\n    long e = min(b + 8, n);\n    long any = 1;\n    if (e - b == 8) {{\n      {ht} t = hv[0];\n      any = 0;\n      for (long i = b; i < b + 8; i++) any |= {test};\n    }}\n    if (any) {{\n      for (long i = b; i < e; i++) {{"
                );
                s.push_str(&cond(&replace));
                s.push_str("      }\n    }\n    b = e;\n  }\n");
            } else {
                s.push_str("  for (long i = b; i < n; i++) {\n");
                s.push_str(&cond(&replace));
                s.push_str("  }\n");
            }
            s.push_str("  }\n  hn[0] = m;\n  return m;\n}\n");
            let mut op = String::new();
            let mut body = String::new();
            for (k, o) in outs.iter().enumerate() {
                if o.str_col.is_none() {
                    let _ = write!(op, ", {} o{k}[m]", o.ty.c());
                    let _ = writeln!(body, "    o{k}[j] = {};", o.c);
                }
            }
            let _ = writeln!(
                s,
                "void tq_gather(long n, long m, const long rows[m]{params}{op}) {{\n  for (long j = 0; j < m; j++) {{\n    long i = rows[j];\n{body}  }}\n}}"
            );
        }
        (Body::Aggregate { keys, aggs, .. }, Shape::Aggregate(groups)) => {
            let mut sp = String::new();
            for (a, g) in aggs.iter().enumerate() {
                let _ = write!(sp, ", {} s{a}[nk]", state_ty(g.f, g.arg.as_ref()).c());
            }
            let upd = |slot: &str, a: usize| -> String {
                let g = &aggs[a];
                let st = state_ty(g.f, g.arg.as_ref()).c();
                let e = g.arg.as_ref().map(|x| x.c.clone()).unwrap_or_default();
                let v = format!("s{a}[{slot}]");
                match g.f {
                    AggFn::Count => match &g.arg {
                        Some(x) if x.can_fail => format!("      {{ long t{a} = (long)({e}); }}\n"),
                        _ => String::new(),
                    },
                    AggFn::Sum | AggFn::Avg => format!("      {v} += ({st})({e});\n"),
                    AggFn::Min => format!(
                        "      {{ {st} t{a} = ({st})({e}); if (t{a} < {v}) {v} = t{a}; }}\n"
                    ),
                    AggFn::Max => format!(
                        "      {{ {st} t{a} = ({st})({e}); if (t{a} > {v}) {v} = t{a}; }}\n"
                    ),
                }
            };
            match groups {
                Groups::Single => {
                    let _ = writeln!(
                        s,
                        "long tq_main(long n, long nk{params}, long cnt[nk]{sp}) {{\n  long a_cnt = cnt[0];"
                    );
                    for (a, g) in aggs.iter().enumerate() {
                        let st = state_ty(g.f, g.arg.as_ref()).c();
                        let _ = writeln!(s, "  {st} a{a} = s{a}[0];");
                    }
                    s.push_str("  for (long i = 0; i < n; i++) {\n");
                    let mut body = String::from("      a_cnt += 1;\n");
                    for a in 0..aggs.len() {
                        body.push_str(&upd("0", a).replace(&format!("s{a}[0]"), &format!("a{a}")));
                    }
                    guarded(&mut s, &body);
                    s.push_str("  }\n  cnt[0] = a_cnt;\n");
                    for a in 0..aggs.len() {
                        let _ = writeln!(s, "  s{a}[0] = a{a};");
                    }
                    s.push_str("  return n;\n}\n");
                    // Branch-free: counts and integer sums of expressions that cannot fail.
                    let simple = aggs.iter().all(|g| match g.f {
                        AggFn::Count => !g.arg.as_ref().is_some_and(|x| x.can_fail),
                        AggFn::Sum => g.arg.as_ref().is_some_and(|x| !x.can_fail && x.ty.is_int()),
                        _ => false,
                    });
                    if let (Some(fb), true) = (
                        &filter_b,
                        simple && !plan.filter.as_ref().is_some_and(|f| f.can_fail),
                    ) {
                        has_vec = true;
                        let _ = writeln!(
                            s,
                            "long tq_vec(long n, long nk{params}, long cnt[nk]{sp}) {{\n  long a_cnt = cnt[0];"
                        );
                        for a in 0..aggs.len() {
                            let _ = writeln!(s, "  long a{a} = s{a}[0];");
                        }
                        let _ = writeln!(
                            s,
                            "  for (long i = 0; i < n; i++) {{\n    long p = ({fb}) != 0;\n    a_cnt += p;"
                        );
                        for (a, g) in aggs.iter().enumerate() {
                            if g.f == AggFn::Sum {
                                let e = &g.arg.as_ref().expect("a sum has an argument").cb;
                                let _ = writeln!(s, "    a{a} += p * (long)({e});");
                            }
                        }
                        s.push_str("  }\n  cnt[0] = a_cnt;\n");
                        for a in 0..aggs.len() {
                            let _ = writeln!(s, "  s{a}[0] = a{a};");
                        }
                        s.push_str("  return n;\n}\n");
                    }
                }
                Groups::Dense(..) => {
                    let _ = writeln!(
                        s,
                        "long tq_main(long n, long nk, long kmin{params}, long cnt[nk]{sp}) {{\n  for (long i = 0; i < n; i++) {{"
                    );
                    let mut body = format!(
                        "      long g = {} - kmin;\n      cnt[g] += 1;\n",
                        key_text(&keys[0])
                    );
                    for a in 0..aggs.len() {
                        body.push_str(&upd("g", a));
                    }
                    guarded(&mut s, &body);
                    s.push_str("  }\n  return n;\n}\n");
                }
                Groups::Hash => {
                    let mut kp = String::new();
                    for k in 0..keys.len() {
                        let _ = write!(kp, ", long hk{k}[nk]");
                    }
                    let _ = writeln!(
                        s,
                        "long tq_main(long n, long nk{params}, long fill[1]{kp}, long cnt[nk]{sp}) {{\n  long mask = nk - 1;\n  long f = fill[0];\n  for (long i = 0; i < n; i++) {{"
                    );
                    let mut body = String::new();
                    let mut h = String::from("      long h = 0;\n");
                    let mut differs = Vec::new();
                    let mut store = String::new();
                    for (k, key) in keys.iter().enumerate() {
                        let _ = writeln!(body, "      long k{k} = {};", key_text(key));
                        let _ = writeln!(h, "      h = (h ^ k{k}) * {HASH_MUL}L;");
                        differs.push(format!("hk{k}[h] != k{k}"));
                        let _ = writeln!(store, "        hk{k}[h] = k{k};");
                    }
                    body.push_str(&h);
                    body.push_str("      h = (h ^ (h >> 31)) & mask;\n");
                    let _ = writeln!(
                        body,
                        "      while (cnt[h] != 0 && ({})) h = (h + 1) & mask;",
                        differs.join(" || ")
                    );
                    let _ = write!(
                        body,
                        "      if (cnt[h] == 0) {{\n        if (2 * (f + 1) > nk) {{\n          fill[0] = f;\n          return i;\n        }}\n        f++;\n{store}      }}\n      cnt[h] += 1;\n"
                    );
                    for a in 0..aggs.len() {
                        body.push_str(&upd("h", a));
                    }
                    guarded(&mut s, &body);
                    s.push_str("  }\n  fill[0] = f;\n  return n;\n}\n");
                }
            }
        }
        _ => unreachable!("the shape matches the body"),
    }
    // tq_locate: every evaluation that can fail, row by row; a program of its own, compiled
    // only after a run-time error.
    let mut l = s[..s.find(PIPELINE).expect("the marker is written above")].to_string();
    let _ = writeln!(
        l,
        "long tq_locate(long n{params}, long at[1]) {{\n  for (long i = 0; i < n; i++) {{\n    at[0] = i;"
    );
    let mut body = String::new();
    let rest: Vec<&&TExpr> = exprs
        .iter()
        .skip(usize::from(plan.filter.is_some()))
        .collect();
    for (k, e) in rest.iter().enumerate() {
        if e.str_col.is_none() {
            let _ = writeln!(body, "      {} t{k} = {};", e.ty.c(), e.c);
        }
    }
    guarded(&mut l, &body);
    l.push_str("  }\n  return 0;\n}\n");
    Generated {
        source: s,
        locate_source: l,
        cols,
        dicts,
        has_vec,
        shape,
    }
}
