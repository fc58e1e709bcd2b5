//! Random affine programs through the polyhedral optimiser, against the interpreter.
//!
//! The generator writes kernels of 1–4 arrays (rank 1–3; `double`, `float`, `int`, `long`,
//! `char` elements; extents over the size parameters `N`, `M`), nests 1–4 deep, imperfect nests,
//! triangular bounds, `min`-like conjunctions of bounds, steps of ±1, ±2 and 3, `int` and
//! `long` counters (declared by their loops, or at the top of the function and reused by
//! every nest, sometimes read after a loop), affine `if`s, scalars declared in the nest (expanded by the model),
//! function-level accumulators, integer arithmetic that wraps, and loop bounds `n`, `m`, `L`
//! that are often different from the extents and sometimes near their type's limits (so
//! accesses fault and expressions wrap). Each program is run by the interpreter (the
//! definition) and through `tessera_poly::optimize` + the JIT under a random variant of the
//! optimiser's options: 1 thread (parallel loops sequential) or the 2-thread pool,
//! parallel loops reversed or shuffled, fusion smart/max/none, tiles off, random tile sizes,
//! register tiles 1/3/4, scratch arrays off. Results, every array bit for bit (NaNs equal)
//! and error values must agree.
//!
//! A failing program is shrunk (statements and loops dropped while it still fails) and
//! printed with its inputs. `TESSERA_OPT_RANDOM_COUNT` sets the number of programs of the
//! long run: `cargo test --release -p tessera-cli --test opt_random -- --ignored`.

use std::collections::{BTreeMap, HashMap};

use tessera_interp::Limits;
use tessera_ir::{ArgValue, ArrayData, Program, RuntimeError, Scalar, VarKind};
use tessera_poly::{Fusion, GenOptions, PolyOptions};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
    fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
}

#[derive(Clone, Copy, PartialEq)]
enum T {
    Int,
    Long,
    Float,
    Double,
    Char,
}

impl T {
    fn c(self) -> &'static str {
        match self {
            T::Int => "int",
            T::Long => "long",
            T::Float => "float",
            T::Double => "double",
            T::Char => "char",
        }
    }
}

/// A program as a tree of items, so that the reducer can drop parts of it.
#[derive(Clone, Debug)]
enum Item {
    /// A statement line.
    Line(String),
    /// `header { items }`
    Block(String, Vec<Item>),
}

struct Arr {
    name: String,
    ty: T,
    /// Extent expressions.
    ext: Vec<&'static str>,
}

struct Gen {
    r: Rng,
    arrays: Vec<Arr>,
    /// Counters in scope: name, and a C expression of its least possible value (for
    /// triangular bounds).
    counters: Vec<String>,
    fresh: usize,
    /// Counters declared at the top of the function and reused by every nest (`c0` at
    /// depth 0, ...), as C89 and PolyBench write them.
    outer: bool,
}

impl Gen {
    fn counter_name(&mut self) -> String {
        if self.outer {
            return format!("c{}", self.counters.len());
        }
        self.fresh += 1;
        format!("i{}", self.fresh)
    }

    /// An affine subscript for extent `ext`: a counter plus a small offset, a sum of two
    /// counters, a reversed counter, a constant.
    fn subscript(&mut self, ext: &str) -> String {
        let c = self.counters.clone();
        if c.is_empty() || self.r.chance(1, 12) {
            return format!("{}", self.r.below(3));
        }
        let a = self.r.pick(&c).clone();
        match self.r.below(9) {
            0 => format!("{a} + 1"),
            // Rarer than the others: it faults at a counter's first value 0, in every input.
            1 if self.r.chance(1, 3) => format!("{a} - 1"),
            2 => format!("{ext} - 1 - {a}"),
            3 if c.len() > 1 => {
                let b = self.r.pick(&c).clone();
                format!("{a} + {b}")
            }
            4 => format!("2 * {a}"),
            _ => a,
        }
    }

    fn access(&mut self) -> (String, T) {
        let k = self.r.below(self.arrays.len() as u64) as usize;
        let (name, ty, ext) = {
            let a = &self.arrays[k];
            (a.name.clone(), a.ty, a.ext.clone())
        };
        let idx: Vec<String> = ext
            .iter()
            .map(|e| format!("[{}]", self.subscript(e)))
            .collect();
        (format!("{name}{}", idx.concat()), ty)
    }

    fn value(&mut self, ty: T, depth: usize) -> String {
        let leaf = depth > 2 || self.r.chance(1, 3);
        if leaf {
            return match self.r.below(5) {
                0 if !self.counters.is_empty() => {
                    let c = self.r.pick(&self.counters).clone();
                    format!("({}) {c}", ty.c())
                }
                1 => match ty {
                    T::Int | T::Long | T::Char => format!("{}", self.r.below(7) as i64 - 3),
                    _ => format!("{}.5", self.r.below(4)),
                },
                2 => "s".into(),
                _ => {
                    let (a, _) = self.access();
                    format!("({}) {a}", ty.c())
                }
            };
        }
        let x = self.value(ty, depth + 1);
        let y = self.value(ty, depth + 1);
        let op = *self.r.pick(&["+", "-", "*", "+"]);
        format!("({x} {op} {y})")
    }

    /// A leaf statement.
    fn stmt(&mut self, out: &mut Vec<Item>) {
        match self.r.below(8) {
            0 => {
                // A scalar declared in the nest (expanded by the model), then used.
                let (w, ty) = self.access();
                let v = self.value(T::Double, 1);
                self.fresh += 1;
                let t = format!("t{}", self.fresh);
                out.push(Item::Line(format!("double {t} = {v};")));
                out.push(Item::Line(format!("{w} = ({}) ({t} * 0.5);", ty.c())));
            }
            1 => {
                // The function-level accumulator.
                let v = self.value(T::Double, 1);
                out.push(Item::Line(format!("acc += {v};")));
            }
            2 if !self.counters.is_empty() => {
                // An affine condition.
                let c = self.r.pick(&self.counters).clone();
                let cond = match self.r.below(4) {
                    0 => format!("{c} + n > 2"),
                    1 => format!("{c} <= m - 1"),
                    2 => format!("2 * {c} >= n"),
                    _ => format!("{c} != 1"),
                };
                let mut inner = Vec::new();
                self.assign(&mut inner);
                out.push(Item::Block(format!("if ({cond})"), inner));
            }
            _ => self.assign(out),
        }
    }

    fn assign(&mut self, out: &mut Vec<Item>) {
        let (w, ty) = self.access();
        let v = self.value(ty, 0);
        let op = *self.r.pick(&["=", "+=", "=", "-="]);
        out.push(Item::Line(format!("{w} {op} {v};")));
    }

    fn loop_header(&mut self) -> String {
        let i = self.counter_name();
        let ty = if self.outer {
            // Declared at the top (`long c2`, the others `int`).
            ""
        } else if self.r.chance(1, 6) {
            "long"
        } else {
            "int"
        };
        let outer = self.counters.last().cloned();
        let bound = *self.r.pick(&["n", "m", "n", "m", "L", "N", "M"]);
        let h = match (self.r.below(9), outer) {
            (0, Some(o)) => format!("for ({ty} {i} = 0; {i} <= {o}; {i}++)"),
            (1, Some(o)) => format!("for ({ty} {i} = {o}; {i} < {bound}; {i}++)"),
            (2, Some(o)) => format!("for ({ty} {i} = 0; {i} < {bound} && {i} < {o} + 2; {i}++)"),
            (3, _) => format!("for ({ty} {i} = {bound} - 1; {i} >= 0; {i}--)"),
            (4, _) => format!("for ({ty} {i} = 1; {i} < {bound}; {i} += 2)"),
            (5, _) => format!("for ({ty} {i} = {bound} - 1; {i} >= 1; {i} -= 2)"),
            (6, _) => format!("for ({ty} {i} = 0; {i} < {bound} - 1; {i} += 3)"),
            _ => format!("for ({ty} {i} = 0; {i} < {bound}; {i}++)"),
        };
        self.counters.push(i);
        h
    }

    fn nest(&mut self, depth: usize, out: &mut Vec<Item>) {
        let h = self.loop_header();
        let mut body = Vec::new();
        if depth > 1 {
            if self.r.chance(1, 3) {
                self.stmt(&mut body);
            }
            self.nest(depth - 1, &mut body);
            if self.r.chance(1, 3) {
                self.stmt(&mut body);
            }
        } else {
            for _ in 0..1 + self.r.below(2) {
                self.stmt(&mut body);
            }
        }
        self.counters.pop();
        out.push(Item::Block(h, body));
    }
}

/// A random kernel: its parameter list and body items.
fn generate(seed: u64) -> (String, Vec<Item>) {
    let mut g = Gen {
        r: Rng(seed),
        arrays: Vec::new(),
        counters: Vec::new(),
        fresh: 0,
        outer: false,
    };
    g.outer = g.r.chance(1, 2);
    let n_arrays = 1 + g.r.below(4);
    let mut params = vec!["int n".to_string(), "int m".into(), "long L".into()];
    params.push("int N".into());
    params.push("int M".into());
    for k in 0..n_arrays {
        let ty =
            *g.r.pick(&[T::Double, T::Double, T::Float, T::Int, T::Long, T::Char]);
        let rank = 1 + g.r.below(3) as usize;
        let ext: Vec<&'static str> = (0..rank).map(|_| *g.r.pick(&["N", "M", "N + 2"])).collect();
        let name = format!("{}", (b'A' + k as u8) as char);
        let dims: Vec<String> = ext.iter().map(|e| format!("[{e}]")).collect();
        params.push(format!("{} {name}{}", ty.c(), dims.concat()));
        g.arrays.push(Arr { name, ty, ext });
    }
    params.push("double s".into());
    let mut items = vec![Item::Line("double acc = 0.0;".into())];
    if g.outer {
        items.push(Item::Line("int c0, c1, c3;".into()));
        items.push(Item::Line("long c2;".into()));
    }
    for _ in 0..1 + g.r.below(2) {
        let depth = 1 + g.r.below(4) as usize;
        g.nest(depth, &mut items);
        if g.outer && g.r.chance(1, 4) {
            // The value a loop leaves in its counter, read after it: that counter's loops
            // must keep the value the program gives it.
            let c = g.r.below(depth as u64);
            items.push(Item::Line(format!("acc += (double) c{c};")));
        }
    }
    items.push(Item::Block(
        "if (N > 0)".into(),
        vec![Item::Line(format!(
            "{}{} += ({}) acc;",
            g.arrays[0].name,
            "[0]".repeat(g.arrays[0].ext.len()),
            g.arrays[0].ty.c()
        ))],
    ));
    (format!("void kernel({})", params.join(", ")), items)
}

fn render(head: &str, items: &[Item]) -> String {
    fn go(items: &[Item], ind: usize, out: &mut String) {
        for it in items {
            match it {
                Item::Line(l) => {
                    out.push_str(&"  ".repeat(ind));
                    out.push_str(l);
                    out.push('\n');
                }
                Item::Block(h, b) => {
                    out.push_str(&"  ".repeat(ind));
                    out.push_str(h);
                    out.push_str(" {\n");
                    go(b, ind + 1, out);
                    out.push_str(&"  ".repeat(ind));
                    out.push_str("}\n");
                }
            }
        }
    }
    let mut s = format!("{head} {{\n");
    go(items, 1, &mut s);
    s.push_str("}\n");
    s
}

/// One run configuration of the optimiser.
#[derive(Debug, Clone)]
struct Variant {
    poly: PolyOptions,
    gen: GenOptions,
}

fn variant(r: &mut Rng) -> Variant {
    let mut poly = PolyOptions {
        fusion: *r.pick(&[Fusion::Smart, Fusion::Max, Fusion::None]),
        // A tenth of the default bound: a SCoP that needs more keeps its code (and is
        // still compared); the suite stays fast.
        max_operations: 2_000_000,
        ..PolyOptions::default()
    };
    match r.below(4) {
        0 => poly.tile = false,
        1 => poly.tile_sizes = Some(vec![2 + r.below(6) as i64, 2 + r.below(6) as i64]),
        _ => {}
    }
    poly.register_tile = *r.pick(&[1, 3, 4]);
    poly.scratch = !r.chance(1, 4);
    let mut gen = GenOptions::default();
    match r.below(4) {
        0 => gen.sequential = true,
        1 => gen.reverse_parallel = true,
        2 => gen.shuffle_parallel = Some(r.next() % 1000),
        _ => {}
    }
    Variant { poly, gen }
}

/// Scalar arguments: sizes small and often equal to the loop bounds; bounds sometimes
/// different, zero, or near their type's limits.
fn scalars(r: &mut Rng) -> Vec<(String, Scalar)> {
    if r.chance(1, 2) {
        // Roomy: extents at least twice the loop bounds, so that most accesses (`i + 1`,
        // `2 * i`, `i + j`) stay in bounds and the transformed code runs; loops bounded by
        // `N` or `M` may still fault.
        let n = *r.pick(&[0, 1, 2, 3, 4, 5, 6]);
        let m = *r.pick(&[0, 1, 2, 3, 5, 7]);
        let l = *r.pick(&[0i64, 1, 2, 3, 5]);
        let big = 2 * n.max(m).max(l as i32) + 2;
        return vec![
            ("n".into(), Scalar::I32(n)),
            ("m".into(), Scalar::I32(m)),
            ("L".into(), Scalar::I64(l)),
            ("N".into(), Scalar::I32(big + r.below(3) as i32)),
            ("M".into(), Scalar::I32(big + r.below(3) as i32)),
            ("s".into(), Scalar::F64(0.25)),
        ];
    }
    let small = [0, 1, 2, 3, 5, 7];
    let n_ext = *r.pick(&small);
    let m_ext = *r.pick(&small);
    let bound = |r: &mut Rng, ext: i32| -> i32 {
        match r.below(10) {
            0 => *r.pick(&[i32::MAX, i32::MAX - 1, i32::MAX - 4, i32::MIN, i32::MIN + 1]),
            1 => *r.pick(&small),
            2 => ext + 1,
            _ => ext,
        }
    };
    let n = bound(r, n_ext);
    let m = bound(r, m_ext);
    let l: i64 = match r.below(8) {
        0 => *r.pick(&[i64::MAX, i64::MAX - 2, i64::MIN, 1 << 40, (1 << 40) + 1]),
        1 => n_ext as i64 + 1,
        _ => n_ext as i64,
    };
    vec![
        ("n".into(), Scalar::I32(n)),
        ("m".into(), Scalar::I32(m)),
        ("L".into(), Scalar::I64(l)),
        ("N".into(), Scalar::I32(n_ext)),
        ("M".into(), Scalar::I32(m_ext)),
        ("s".into(), Scalar::F64(0.25)),
    ]
}

fn args(p: &Program, sc: &[(String, Scalar)], seed: u64) -> Vec<ArgValue> {
    let (fid, f) = p.function("kernel").expect("kernel");
    let by_name: HashMap<&str, Scalar> = sc.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    let scal: Vec<Option<Scalar>> = f
        .params
        .iter()
        .map(|v| by_name.get(f.var(*v).name.as_str()).copied())
        .collect();
    let shapes = tessera_interp::declared_shapes(p, fid, &scal).unwrap_or_default();
    f.params
        .iter()
        .enumerate()
        .map(|(k, v)| match &f.var(*v).kind {
            VarKind::Scalar(_) => ArgValue::Scalar(scal[k].expect("scalar")),
            VarKind::Array { elem, rank } => {
                let shape: Vec<usize> = match shapes.get(k) {
                    Some(Some(s)) => s.iter().map(|&x| x.max(0) as usize).collect(),
                    _ => vec![0; *rank],
                };
                let mut d = ArrayData::zeros(*elem, &shape).expect("array");
                d.fill_random(seed, &f.var(*v).name);
                ArgValue::Array(d)
            }
        })
        .collect()
}

/// Array bytes with NaNs canonicalised (their sign and payload are unspecified:
/// docs/language.md), through the shared `ArrayElems::canonicalize_nans`.
fn canon(a: &[ArgValue]) -> Vec<Vec<u8>> {
    a.iter()
        .filter_map(|x| match x {
            ArgValue::Array(d) => {
                let mut e = d.elems.clone();
                e.canonicalize_nans();
                Some(e.to_le_bytes())
            }
            _ => None,
        })
        .collect()
}

const LIMITS: Limits = Limits {
    max_call_depth: 100,
    arena_bytes: 1 << 20,
    max_steps: Some(200_000),
};

/// Runs one program under one variant on each input; `Err` describes a mismatch. `Ok`
/// carries each outcome's kind for the statistics. The optimised program is compiled once.
fn run_one(
    src: &str,
    v: &Variant,
    inputs: &[(Vec<(String, Scalar)>, u64)],
) -> Result<Vec<String>, String> {
    let p = tessera_sema::compile_source(src, &HashMap::new())
        .map_err(|d| format!("front end rejected the program: {d:?}"))?;
    let (fid, _) = p.function("kernel").expect("kernel");
    let (mut opt, _) = tessera_poly::optimize(&p, &v.poly, v.gen);
    // Every access the optimiser marked proven (guard dropped) is checked again: a proof
    // that is wrong then shows as an error the interpreter does not report, instead of a
    // silent write outside an array.
    for f in &mut opt.functions {
        unprove(&mut f.body);
    }
    let jit_opts = tessera_jit::Options {
        limits: Limits {
            max_steps: None,
            ..LIMITS
        },
        ..tessera_jit::Options::default()
    };
    let jit = tessera_jit::Compiled::compile(&opt, &jit_opts).map_err(|e| format!("JIT: {e}"))?;
    let mut kinds = Vec::new();
    for (sc, seed) in inputs {
        let mut a1 = args(&p, sc, *seed);
        let mut a2 = a1.clone();
        let r1 = tessera_interp::call(&p, fid, &mut a1, LIMITS);
        if let Err(RuntimeError { kind, .. }) = &r1 {
            if format!("{kind:?}").starts_with("StepLimit") {
                // Too long for the interpreter: not compared (opt runs without the limit).
                kinds.push("steps".into());
                continue;
            }
        }
        let r2 = jit.call(fid, &mut a2);
        match (&r1, &r2) {
            (Ok(_), Ok(_)) => {}
            (Err(x), Err(y)) if x == y => {}
            _ => return Err(format!("scalars {sc:?}\ninterp {r1:?}\nopt    {r2:?}")),
        }
        if canon(&a1) != canon(&a2) {
            return Err(format!(
                "scalars {sc:?}\narrays differ\ninterp {a1:?}\nopt    {a2:?}"
            ));
        }
        if std::env::var_os("TESSERA_OPT_RANDOM_VERBOSE").is_some() {
            eprintln!("  {sc:?}: {r1:?}");
        }
        kinds.push(match r1 {
            Ok(_) => "ok".into(),
            Err(e) => format!("{:?}", e.kind)
                .split([' ', '{', '('])
                .next()
                .unwrap_or("")
                .to_string(),
        });
    }
    Ok(kinds)
}

/// Clears the `proven` marks of every array access in `body` (the JIT then checks them).
fn unprove(body: &mut [tessera_ir::Stmt]) {
    use tessera_ir::{ExprKind, Place};
    tessera_ir::walk_stmts_mut(body, &mut |e| {
        match &mut e.kind {
            ExprKind::Load { proven, .. }
            | ExprKind::Assign {
                place: Place::Elem { proven, .. },
                ..
            }
            | ExprKind::IncDec {
                place: Place::Elem { proven, .. },
                ..
            } => *proven = 0,
            _ => {}
        }
        true
    });
}

/// Drops items (statements, whole loops, loop bodies lifted) while the failure persists.
fn reduce(head: &str, mut items: Vec<Item>, fails: &dyn Fn(&str) -> bool) -> Vec<Item> {
    fn candidates(items: &[Item]) -> Vec<Vec<Item>> {
        let mut out = Vec::new();
        for k in 0..items.len() {
            let mut v = items.to_vec();
            v.remove(k);
            out.push(v);
            if let Item::Block(h, b) = &items[k] {
                for sub in candidates(b) {
                    let mut v = items.to_vec();
                    v[k] = Item::Block(h.clone(), sub);
                    out.push(v);
                }
            }
        }
        out
    }
    loop {
        let mut progress = false;
        for c in candidates(&items) {
            let src = render(head, &c);
            if tessera_sema::compile_source(&src, &HashMap::new()).is_ok() && fails(&src) {
                items = c;
                progress = true;
                break;
            }
        }
        if !progress {
            return items;
        }
    }
}

fn run_random(count: u64, seed0: u64) -> BTreeMap<String, usize> {
    run_random_from(0, count, seed0)
}

/// Programs `start..start + count` of the sequence `seed0` starts.
fn run_random_from(start: u64, count: u64, seed0: u64) -> BTreeMap<String, usize> {
    tessera_runtime::Runtime::init_global(Some(2)).expect("pool");
    let mut stats = BTreeMap::new();
    for k in start..start + count {
        let seed = seed0.wrapping_add(k).wrapping_mul(0x2545_F491_4F6C_DD1D);
        let (head, items) = generate(seed);
        let src = render(&head, &items);
        if let Err(d) = tessera_sema::compile_source(&src, &HashMap::new()) {
            panic!("generator wrote a program the front end rejects:\n{src}\n{d:?}");
        }
        let mut r = Rng(seed ^ 0x5eed);
        if std::env::var_os("TESSERA_OPT_RANDOM_VERBOSE").is_some() {
            eprintln!("program {k} (seed {seed})");
        }
        let v = variant(&mut r);
        let inputs: Vec<(Vec<(String, Scalar)>, u64)> =
            (0..3).map(|_| (scalars(&mut r), r.next())).collect();
        match run_one(&src, &v, &inputs) {
            Ok(kinds) => {
                for kind in kinds {
                    *stats.entry(kind).or_insert(0) += 1;
                }
            }
            Err(why) => {
                let small = reduce(&head, items.clone(), &|s| run_one(s, &v, &inputs).is_err());
                let small = render(&head, &small);
                let why = run_one(&small, &v, &inputs).err().unwrap_or(why);
                panic!(
                    "opt differs from the interpreter (seed {seed})\nreduced program:\n{small}\nvariant {v:?}\n{why}\n\noriginal program:\n{src}"
                );
            }
        }
    }
    stats
}

#[test]
fn opt_random_programs() {
    let n = std::env::var("TESSERA_OPT_RANDOM_CI")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(150);
    let stats = run_random(n, 7);
    eprintln!("opt random programs: {n} x 3 inputs: {stats:?}");
    assert!(
        stats.get("ok").copied().unwrap_or(0) > n as usize / 2,
        "{stats:?}"
    );
    assert!(stats.len() >= 2, "no faulting run: {stats:?}");
}

/// The long run: `cargo test --release -p tessera-cli --test opt_random -- --ignored`;
/// `TESSERA_OPT_RANDOM_COUNT` programs (default 5000).
#[test]
#[ignore]
fn opt_random_programs_long() {
    let n = std::env::var("TESSERA_OPT_RANDOM_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5000);
    // `TESSERA_OPT_RANDOM_START=k` resumes at program k (to split a long run, or to reach a
    // failing program quickly).
    let start: u64 = std::env::var("TESSERA_OPT_RANDOM_START")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let stats = run_random_from(start, n, 1_000_003);
    eprintln!("opt random programs: {n} x 3 inputs: {stats:?}");
}

#[test]
fn generator_programs_have_scops() {
    // Keeps the generator honest: most programs are accepted and have a SCoP.
    let mut with = 0;
    for s in 0..40 {
        let (h, items) = generate(s);
        let src = render(&h, &items);
        let p = tessera_sema::compile_source(&src, &HashMap::new()).expect("front end");
        let (_, rep) = tessera_poly::optimize(&p, &PolyOptions::default(), GenOptions::default());
        if !rep.scops.is_empty() {
            with += 1;
        }
    }
    assert!(with >= 30, "only {with} of 40 random programs have a SCoP");
}
