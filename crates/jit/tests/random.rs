//! Random well-typed programs: nested loops with small bounds, nested ifs, int/long/double
//! arithmetic, `char` variables and arrays (promoted on every read, wrapping on every store), array reads and writes whose indices are sometimes out of bounds, divisions
//! that are sometimes by zero, shifts that are sometimes invalid, local arrays, sub-array
//! calls whose declared extents sometimes mismatch. Each is compiled by the front end and
//! run by the interpreter and the JIT on random inputs; results and errors must agree.
mod common;
use common::*;
use std::collections::BTreeMap;
use std::fmt::Write;
use tessera_interp::Limits;
use tessera_ir::*;

#[derive(Clone, Copy, PartialEq)]
enum T {
    Int,
    Long,
    Double,
    /// `char`: a storage type; its expressions are `int` ones, converted where stored.
    Char,
}

struct Gen {
    r: Rng,
    /// Mutable scalar locals: name and type.
    vars: Vec<(String, T)>,
    /// Read-only loop counters (int).
    counters: Vec<String>,
    /// Arrays in scope: name, element type, extents (as C expressions).
    arrays: Vec<(String, T, Vec<String>)>,
    fresh: usize,
    loop_depth: usize,
    /// True inside the helper (no calls of the helper there).
    in_helper: bool,
    out: String,
    indent: usize,
}

impl Gen {
    fn name(&mut self, p: &str) -> String {
        self.fresh += 1;
        format!("{p}{}", self.fresh)
    }

    fn cty(t: T) -> &'static str {
        match t {
            T::Int => "int",
            T::Long => "long",
            T::Double => "double",
            T::Char => "char",
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.indent {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn lit(&mut self, t: T) -> String {
        match t {
            T::Int | T::Long => {
                let v = if self.r.chance(1, 10) {
                    *pick(
                        &mut self.r,
                        &[2147483647i64, -2147483648, 65536, -1, 1 << 20],
                    )
                } else {
                    self.r.range(-5, 9)
                };
                let suffix = if t == T::Long { "L" } else { "" };
                if v < 0 {
                    format!("({v}{suffix})")
                } else {
                    format!("{v}{suffix}")
                }
            }
            T::Double => pick(
                &mut self.r,
                &["0.5", "1.0", "2.25", "-3.5", "0.0", "1e10", "1e-3", "7.0"],
            )
            .to_string(),
            T::Char => pick(
                &mut self.r,
                &[
                    "0", "1", "(-1)", "5", "100", "127", "(-128)", "200", "(-129)", "300",
                ],
            )
            .to_string(),
        }
    }

    /// Whether a variable or array of type `have` can be read where `want` is: a `char` is
    /// promoted, so it is read as an `int`.
    fn reads_as(have: T, want: T) -> bool {
        have == want || (want == T::Int && have == T::Char)
    }

    fn index(&mut self, extent: &str, d: usize) -> String {
        // Usually in range, sometimes not.
        let k = self.r.below(20);
        if k < 12 && !self.counters.is_empty() {
            let c = pick(&mut self.r, &self.counters).clone();
            format!("({c} % {extent})")
        } else if k < 14 && !self.counters.is_empty() {
            let c = pick(&mut self.r, &self.counters).clone();
            format!("({c} % ({extent} + 1))")
        } else if k < 16 {
            format!("({} % {extent})", self.expr(T::Int, d + 1))
        } else if k < 19 {
            "0".to_string()
        } else {
            self.expr(T::Long, d + 1)
        }
    }

    fn load(&mut self, t: T, d: usize) -> Option<String> {
        let cands: Vec<_> = self
            .arrays
            .iter()
            .filter(|a| Self::reads_as(a.1, t))
            .cloned()
            .collect();
        if cands.is_empty() {
            return None;
        }
        let (name, _, ext) = pick(&mut self.r, &cands).clone();
        let mut s = name;
        for e in &ext {
            let i = self.index(e, d);
            write!(s, "[{i}]").unwrap();
        }
        Some(s)
    }

    fn leaf(&mut self, t: T, d: usize) -> String {
        let k = self.r.below(10);
        if k < 3 {
            return self.lit(t);
        }
        if k < 6 {
            if let Some(l) = self.load(t, d) {
                return l;
            }
        }
        let mut names: Vec<String> = self
            .vars
            .iter()
            .filter(|v| Self::reads_as(v.1, t))
            .map(|v| v.0.clone())
            .collect();
        if t == T::Int {
            names.extend(self.counters.iter().cloned());
        }
        if names.is_empty() {
            self.lit(t)
        } else {
            pick(&mut self.r, &names).clone()
        }
    }

    fn expr(&mut self, t: T, d: usize) -> String {
        if d > 3 || self.r.chance(1, 4) {
            return self.leaf(t, d);
        }
        let k = self.r.below(20);
        match t {
            // Stored into a `char`: any `int` expression (converted), an explicit cast, an
            // increment of a `char` variable, or a `char` leaf.
            T::Char => match k {
                0..=10 => self.expr(T::Int, d),
                11 => {
                    let a = *pick(&mut self.r, &[T::Int, T::Long, T::Double]);
                    format!("((char){})", self.expr(a, d + 1))
                }
                12 => {
                    let vs: Vec<String> = self
                        .vars
                        .iter()
                        .filter(|v| v.1 == T::Char)
                        .map(|v| v.0.clone())
                        .collect();
                    if vs.is_empty() {
                        self.leaf(t, d)
                    } else {
                        let v = pick(&mut self.r, &vs).clone();
                        let op = *pick(&mut self.r, &["++", "--"]);
                        if self.r.chance(1, 2) {
                            format!("({v}{op})")
                        } else {
                            format!("({op}{v})")
                        }
                    }
                }
                _ => self.leaf(t, d),
            },
            T::Int | T::Long => match k {
                0..=5 => {
                    let op = *pick(&mut self.r, &["+", "-", "*", "&", "|", "^"]);
                    format!("({} {op} {})", self.expr(t, d + 1), self.expr(t, d + 1))
                }
                6 | 7 => {
                    let op = *pick(&mut self.r, &["/", "%"]);
                    if self.r.chance(1, 3) {
                        format!("({} {op} {})", self.expr(t, d + 1), self.expr(t, d + 1))
                    } else {
                        format!(
                            "({} {op} ({} | 1))",
                            self.expr(t, d + 1),
                            self.expr(t, d + 1)
                        )
                    }
                }
                8 => {
                    let op = *pick(&mut self.r, &["<<", ">>"]);
                    let w = if t == T::Int { 31 } else { 63 };
                    if self.r.chance(1, 3) {
                        format!(
                            "({} {op} {})",
                            self.expr(t, d + 1),
                            self.expr(T::Int, d + 1)
                        )
                    } else {
                        format!(
                            "({} {op} ({} & {w}))",
                            self.expr(t, d + 1),
                            self.expr(T::Int, d + 1)
                        )
                    }
                }
                9 => {
                    let a = *pick(&mut self.r, &[T::Int, T::Long, T::Double]);
                    let op = *pick(&mut self.r, &["<", "<=", ">", ">=", "==", "!="]);
                    format!("({} {op} {})", self.expr(a, d + 1), self.expr(a, d + 1))
                }
                10 => format!(
                    "({} ? {} : {})",
                    self.cond(d + 1),
                    self.expr(t, d + 1),
                    self.expr(t, d + 1)
                ),
                11 => format!("(({}){})", Self::cty(t), self.expr(T::Double, d + 1)),
                12 => format!(
                    "(({}){})",
                    Self::cty(t),
                    self.expr(if t == T::Int { T::Long } else { T::Int }, d + 1)
                ),
                13 => {
                    let f = *pick(&mut self.r, &["min", "max"]);
                    format!("{f}({}, {})", self.expr(t, d + 1), self.expr(t, d + 1))
                }
                14 => format!("(- {})", self.expr(t, d + 1)),
                15 => format!("(~{})", self.expr(t, d + 1)),
                16 if !self.in_helper => {
                    let m = pick(&mut self.r, &["m", "n", "2"]).to_string();
                    let q = self.expr(T::Long, d + 1);
                    let i = self.index("n", d);
                    format!("(({})h({m}, A[{i}], {q}))", Self::cty(t))
                }
                17 => {
                    let vs: Vec<String> = self
                        .vars
                        .iter()
                        .filter(|v| v.1 == t)
                        .map(|v| v.0.clone())
                        .collect();
                    if vs.is_empty() {
                        self.leaf(t, d)
                    } else {
                        let v = pick(&mut self.r, &vs).clone();
                        let op = *pick(&mut self.r, &["++", "--"]);
                        if self.r.chance(1, 2) {
                            format!("({v}{op})")
                        } else {
                            format!("({op}{v})")
                        }
                    }
                }
                _ => self.leaf(t, d),
            },
            T::Double => match k {
                0..=6 => {
                    let op = *pick(&mut self.r, &["+", "-", "*", "/"]);
                    format!("({} {op} {})", self.expr(t, d + 1), self.expr(t, d + 1))
                }
                7 => format!("(double)({})", self.expr(T::Long, d + 1)),
                8 => format!("({})", self.expr(T::Int, d + 1)),
                9 => {
                    let f = *pick(
                        &mut self.r,
                        &[
                            "sqrt(fabs",
                            "floor(",
                            "ceil(",
                            "sin(",
                            "cos(",
                            "tanh(",
                            "exp(-fabs",
                            "log(1.0 + fabs",
                        ],
                    );
                    let close = if f.ends_with('(') { ")" } else { "))" };
                    let f = if f.ends_with('(') {
                        f.to_string()
                    } else {
                        format!("{f}(")
                    };
                    format!("{f}{}{close}", self.expr(t, d + 1))
                }
                10 => {
                    let f = *pick(&mut self.r, &["fmin", "fmax", "pow"]);
                    format!("{f}({}, {})", self.expr(t, d + 1), self.expr(t, d + 1))
                }
                11 => format!(
                    "({} ? {} : {})",
                    self.cond(d + 1),
                    self.expr(t, d + 1),
                    self.expr(t, d + 1)
                ),
                12 if !self.in_helper => {
                    let m = pick(&mut self.r, &["m", "m", "n", "1", "3"]).to_string();
                    let q = self.expr(T::Long, d + 1);
                    let i = self.index("n", d);
                    format!("h({m}, A[{i}], {q})")
                }
                13 => format!("(- {})", self.expr(t, d + 1)),
                _ => self.leaf(t, d),
            },
        }
    }

    fn cond(&mut self, d: usize) -> String {
        match self.r.below(if d > 3 { 3 } else { 5 }) + if d > 3 { 3 } else { 0 } {
            0 => format!("({} && {})", self.cond(d + 1), self.cond(d + 1)),
            1 => format!("({} || {})", self.cond(d + 1), self.cond(d + 1)),
            2 => format!("(!{})", self.cond(d + 1)),
            _ => {
                let a = *pick(&mut self.r, &[T::Int, T::Long, T::Double]);
                let op = *pick(&mut self.r, &["<", "<=", ">", ">=", "==", "!="]);
                format!("({} {op} {})", self.expr(a, d + 1), self.expr(a, d + 1))
            }
        }
    }

    fn stmt(&mut self, depth: usize) {
        let k = self.r.below(if depth > 2 { 6 } else { 12 });
        match k {
            0 | 1 => {
                // Assign a scalar.
                let vs = self.vars.clone();
                if vs.is_empty() {
                    return self.decl();
                }
                let (v, t) = pick(&mut self.r, &vs).clone();
                let op = *pick(&mut self.r, &["=", "=", "+=", "-=", "*=", "/="]);
                let e = self.expr(t, 0);
                self.line(&format!("{v} {op} {e};"));
            }
            2 | 3 => {
                // Store to an array element.
                let t = *pick(&mut self.r, &[T::Int, T::Long, T::Double, T::Char]);
                if let Some(l) = self.load(t, 0) {
                    let op = *pick(&mut self.r, &["=", "+=", "-="]);
                    let e = self.expr(t, 0);
                    self.line(&format!("{l} {op} {e};"));
                }
            }
            4 => self.decl(),
            5 if self.loop_depth > 0 => {
                let c = self.cond(1);
                let what = if self.r.chance(1, 2) {
                    "break"
                } else {
                    "continue"
                };
                self.line(&format!("if {c} {what};"));
            }
            6 | 7 => {
                let c = self.cond(0);
                self.line(&format!("if {c} {{"));
                self.block(depth + 1);
                if self.r.chance(1, 2) {
                    self.line("} else {");
                    self.block(depth + 1);
                }
                self.line("}");
            }
            8 | 9 => {
                let i = self.name("i");
                let bound = if self.in_helper {
                    pick(&mut self.r, &["k", "3", "(k + 1)", "2"]).to_string()
                } else {
                    pick(&mut self.r, &["n", "m", "3", "(n + 1)", "2"]).to_string()
                };
                self.line(&format!("for (int {i} = 0; {i} < {bound}; {i}++) {{"));
                self.counters.push(i);
                self.loop_depth += 1;
                self.block(depth + 1);
                self.loop_depth -= 1;
                self.counters.pop();
                self.line("}");
            }
            10 => {
                let w = self.name("w");
                self.line(&format!("int {w} = 0;"));
                let body_do = self.r.chance(1, 2);
                if body_do {
                    self.line("do {");
                } else {
                    self.line(&format!("while ({w} < 3) {{"));
                }
                self.indent += 1;
                self.line(&format!("{w}++;"));
                self.indent -= 1;
                self.counters.push(w.clone());
                self.loop_depth += 1;
                self.block(depth + 1);
                self.loop_depth -= 1;
                self.counters.pop();
                if body_do {
                    self.line(&format!("}} while ({w} < 2);"));
                } else {
                    self.line("}");
                }
            }
            11 => {
                // A local array in its own block.
                let a = self.name("T");
                let t = *pick(&mut self.r, &[T::Int, T::Long, T::Double, T::Char]);
                let e1 = if self.in_helper {
                    pick(&mut self.r, &["k", "2", "(k - 2)", "(q % 3)"]).to_string()
                } else {
                    pick(&mut self.r, &["n", "m", "2", "(m - 1)", "(n - 3)"]).to_string()
                };
                let dims = if self.r.chance(1, 2) {
                    vec![e1]
                } else {
                    vec![e1, "3".to_string()]
                };
                self.line("{");
                self.indent += 1;
                let decl = dims.iter().map(|d| format!("[{d}]")).collect::<String>();
                self.line(&format!("{} {a}{decl};", Self::cty(t)));
                self.arrays.push((a, t, dims));
                let nv = self.vars.len();
                for _ in 0..self.r.range(1, 3) {
                    self.stmt(depth + 1);
                }
                self.vars.truncate(nv);
                self.arrays.pop();
                self.indent -= 1;
                self.line("}");
            }
            _ => {
                let e = self.expr(T::Long, 0);
                let vs: Vec<String> = self
                    .vars
                    .iter()
                    .filter(|v| v.1 == T::Long)
                    .map(|v| v.0.clone())
                    .collect();
                if let Some(v) = vs.first() {
                    self.line(&format!("{v} += {e};"));
                }
            }
        }
    }

    fn decl(&mut self) {
        let t = *pick(&mut self.r, &[T::Int, T::Long, T::Double, T::Char]);
        let v = self.name("v");
        let e = self.expr(t, 1);
        self.line(&format!("{} {v} = {e};", Self::cty(t)));
        self.vars.push((v, t));
    }

    fn block(&mut self, depth: usize) {
        self.indent += 1;
        let nv = self.vars.len();
        for _ in 0..self.r.range(1, 4) {
            self.stmt(depth);
        }
        self.vars.truncate(nv);
        self.indent -= 1;
    }
}

/// Generates one program with entry `kernel`.
fn generate(seed: u64) -> String {
    let mut g = Gen {
        r: Rng(seed),
        vars: vec![],
        counters: vec![],
        arrays: vec![("r".into(), T::Double, vec!["k".into()])],
        fresh: 0,
        loop_depth: 0,
        in_helper: true,
        out: String::new(),
        indent: 1,
    };
    g.vars.push(("q".into(), T::Long));
    g.counters.push("k".into());
    let mut src = String::from("double h(int k, double r[k], long q) {\n");
    for _ in 0..g.r.range(0, 3) {
        g.stmt(1);
    }
    let ret = g.expr(T::Double, 1);
    g.line(&format!("return {ret};"));
    src.push_str(&g.out);
    src.push_str("}\n");
    g.out.clear();
    g.in_helper = false;
    g.vars = vec![
        ("s0".into(), T::Int),
        ("s1".into(), T::Long),
        ("s2".into(), T::Double),
        ("s3".into(), T::Char),
    ];
    g.counters = vec!["n".into(), "m".into()];
    g.arrays = vec![
        ("A".into(), T::Double, vec!["n".into(), "m".into()]),
        ("B".into(), T::Long, vec!["n".into()]),
        ("C".into(), T::Int, vec!["m".into()]),
        ("D".into(), T::Char, vec!["n".into()]),
    ];
    let rt = *pick(&mut g.r, &[T::Int, T::Long, T::Double, T::Char]);
    for _ in 0..g.r.range(2, 6) {
        g.stmt(0);
    }
    let ret = g.expr(rt, 0);
    g.line(&format!("return {ret};"));
    format!(
        "{src}{} kernel(int n, int m, double A[n][m], long B[n], int C[m], int s0, long s1, double s2, char D[n], char s3) {{\n{}}}\n",
        Gen::cty(rt),
        g.out
    )
}

fn run_random(count: u64, seed0: u64, inputs: usize) -> BTreeMap<String, usize> {
    let limits = Limits {
        max_steps: Some(5_000),
        max_call_depth: 100,
        arena_bytes: 1 << 16,
    };
    let mut stats = BTreeMap::new();
    for s in 0..count {
        let seed = seed0.wrapping_add(s).wrapping_mul(0x2545_F491_4F6C_DD1D);
        let src = generate(seed);
        let p = prog(&src);
        let jit = tessera_jit::Compiled::compile(&p, &opts(limits))
            .unwrap_or_else(|e| panic!("compile failed: {e}\n{src}"));
        *stats.entry("compile_ms_total".to_string()).or_insert(0) += jit.compile_ms() as usize;
        let (fid, _) = p.function("kernel").unwrap();
        let mut r = Rng(seed ^ 0xabcdef);
        for _ in 0..inputs {
            let n = if r.chance(1, 10) {
                0
            } else {
                r.range(1, 4) as i32
            };
            let m = if r.chance(1, 10) {
                0
            } else {
                r.range(1, 4) as i32
            };
            let fixed = [Some(Scalar::I32(n)), Some(Scalar::I32(m))];
            let args = random_args(&p, fid, &fixed, &mut r);
            let what = format!("seed {seed}:\n{src}");
            let key = match same(&p, &jit, fid, &args, limits, &what) {
                Ok(_) => "ok".to_string(),
                Err(e) => format!("{:?}", e.kind)
                    .split([' ', '{'])
                    .next()
                    .unwrap()
                    .to_string(),
            };
            *stats.entry(key).or_insert(0) += 1;
        }
    }
    stats
}

#[test]
fn random_programs() {
    let stats = run_random(300, 1, 4);
    eprintln!("random programs: 300 x 4 inputs: {stats:?}");
    assert!(stats.get("ok").copied().unwrap_or(0) > 100, "{stats:?}");
    assert!(stats.len() >= 4, "{stats:?}");
}

/// The long version: `cargo test -p tessera-jit --release --test random -- --ignored`.
/// `TESSERA_RANDOM_COUNT` sets the number of programs (default 20000).
#[test]
#[ignore]
fn random_programs_long() {
    let n = std::env::var("TESSERA_RANDOM_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let stats = run_random(n, 1_000_000, 8);
    eprintln!("random programs: {n} x 8 inputs: {stats:?}");
}

#[test]
fn generator_sample_compiles() {
    // Keeps the generator honest: its output is accepted by the front end.
    for s in 0..20 {
        let _ = prog(&generate(s));
    }
}
