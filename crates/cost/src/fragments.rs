//! Fragments of TIR functions, their instruction classes, and the instrumentation pass that
//! counts them exactly (see the crate documentation for the definitions).

use tessera_ir::*;

/// Number of instruction classes counted (debug instructions are not counted: TIR has none
/// that execute, and every model gives them cost 0).
pub const NCLASSES: usize = 8;

/// An instruction class, the analogue of the paper's classes for the instructions of TIR
/// as the JIT lowers them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// An array element load or store (a compound assignment to an element is both).
    Array,
    /// Integer, bool and address arithmetic, comparisons, conversions between integers,
    /// integer `min`/`max`, shifts, the select of `?:`, `&&`, `||`. Conversions of constants
    /// and of a comparison's result to `bool` are folded and not counted; an access of rank
    /// `r` counts `2(r − 1)` for its address.
    IntArith,
    /// Floating-point arithmetic, comparisons, conversions involving a float, cheap float
    /// builtins (`fabs`, `floor`, `ceil`, `fmin`, `fmax`).
    FloatArith,
    /// Integer and float division and remainder, `sqrt` and the transcendental builtins
    /// (`exp`, `log`, `pow`, `sin`, `cos`, `tanh`).
    Math,
    /// A guard: a run-time check the JIT emits (array index bounds per unproven dimension,
    /// integer division by a non-constant, a shift by a count not known to be in range,
    /// a local array's extent check) or the conditional branch of an `if` or a loop test
    /// (in a trace these are guards too).
    Guard,
    /// A read or write of a scalar variable (the analogue of an object field get/set).
    Scalar,
    /// A local array declaration (allocation from the call's arena).
    Alloc,
    /// A call of a program function (the callee's own fragments are counted separately).
    Call,
}

impl Class {
    /// All classes, in the order of [`ClassCounts`] and of design-matrix columns.
    pub const ALL: [Class; NCLASSES] = [
        Class::Array,
        Class::IntArith,
        Class::FloatArith,
        Class::Math,
        Class::Guard,
        Class::Scalar,
        Class::Alloc,
        Class::Call,
    ];
    /// The column of the class in count vectors.
    pub fn index(self) -> usize {
        self as usize
    }
    /// A short lower-case name.
    pub fn name(self) -> &'static str {
        match self {
            Class::Array => "array",
            Class::IntArith => "int",
            Class::FloatArith => "float",
            Class::Math => "math",
            Class::Guard => "guard",
            Class::Scalar => "scalar",
            Class::Alloc => "alloc",
            Class::Call => "call",
        }
    }
}

/// A count of instructions per class (indexed by [`Class::index`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClassCounts(pub [u64; NCLASSES]);

impl ClassCounts {
    /// Adds `n` instructions of class `c`.
    pub fn add(&mut self, c: Class, n: u64) {
        self.0[c.index()] += n;
    }
    /// The count of class `c`.
    pub fn get(&self, c: Class) -> u64 {
        self.0[c.index()]
    }
    /// All non-debug instructions.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    /// Adds every class of `other`.
    pub fn add_all(&mut self, other: &ClassCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

/// Index of a node in [`FragmentMap::nodes`]; also the node's counter index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// What kind of merge point a label is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LabelKind {
    /// The entry of a function.
    Entry,
    /// A loop header: the condition test of `while`/`for`, the start of each iteration of
    /// `do`-`while`, the iteration test of a parallel loop.
    LoopHeader,
    /// The target of `continue`: the step of a `for` loop, the condition of `do`-`while`.
    LoopLatch,
    /// The point after a loop (reached from its test and from every `break`).
    LoopExit,
    /// The point after an `if`, where its branches join.
    Join,
}

/// Which way a two-way branch went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArmKind {
    /// The `then` branch of an `if`.
    Then,
    /// The `else` branch of an `if` (possibly empty).
    Else,
    /// Into a loop body from the loop test.
    Body,
    /// Out of a loop from its test.
    Exit,
    /// Back to the header from the condition of a `do`-`while`.
    Back,
}

/// A label or a branch arm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    /// A label: a merge point, where fragments start.
    Label(LabelKind),
    /// One side of the two-way branch that ends node `parent` (the analogue of a bridge).
    Arm {
        /// The node whose code ends with the branch.
        parent: NodeId,
        /// Which side.
        arm: ArmKind,
    },
}

/// How the straight-line code of a node ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeEnd {
    /// Control reaches a label (next statement, loop back edge, `break`, `continue`).
    Goto(NodeId),
    /// A two-way branch into the two arm nodes (true side first).
    Split(NodeId, NodeId),
    /// The function returns (`return` or falling off its end).
    Exit,
}

/// A label or arm with the straight-line code it starts.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The function it is in.
    pub func: FuncId,
    /// Label or arm.
    pub kind: NodeKind,
    /// Where it is in the source (the loop test, the `if` condition, the function name).
    pub span: Span,
    /// The instructions of its straight-line code, per execution of the node.
    pub own: ClassCounts,
    /// How that code ends.
    pub end: NodeEnd,
}

/// A fragment: a path from a label through branch arms to a label or an exit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fragment {
    /// The label it starts at.
    pub label: NodeId,
    /// The nodes on the path, the label first; the last one's count is the fragment's
    /// frequency.
    pub path: Vec<NodeId>,
    /// Its instructions: the sum of the `own` counts of the path's nodes.
    pub classes: ClassCounts,
    /// Where it ends ([`NodeEnd::Goto`] or [`NodeEnd::Exit`]).
    pub end: NodeEnd,
}

impl Fragment {
    /// The node whose count is the fragment's frequency.
    pub fn leaf(&self) -> NodeId {
        *self.path.last().expect("a fragment has at least its label")
    }
}

/// The labels, arms and fragments of every function of a program.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FragmentMap {
    /// All nodes, function by function, each in pre-order of the source.
    pub nodes: Vec<Node>,
    /// All fragments, grouped by label in node order.
    pub fragments: Vec<Fragment>,
}

impl FragmentMap {
    /// The node with the given id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }
    /// The labels of the program, in node order.
    pub fn labels(&self) -> impl Iterator<Item = NodeId> + '_ {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| matches!(n.kind, NodeKind::Label(_)))
            .map(|(i, _)| NodeId(i as u32))
    }
    /// The labels of function `f` with their kinds, in node order.
    pub fn labels_of(&self, f: FuncId) -> Vec<(NodeId, LabelKind)> {
        self.labels()
            .filter_map(|id| match self.node(id) {
                Node {
                    func,
                    kind: NodeKind::Label(k),
                    ..
                } if *func == f => Some((id, *k)),
                _ => None,
            })
            .collect()
    }
    fn collect_fragments(&mut self) {
        let mut frags = Vec::new();
        let labels: Vec<NodeId> = self.labels().collect();
        for l in labels {
            let mut stack = vec![(vec![l], self.node(l).own)];
            while let Some((path, classes)) = stack.pop() {
                let last = *path.last().unwrap();
                match self.node(last).end {
                    NodeEnd::Split(a, b) => {
                        // Push b first so that the true side comes out first.
                        for arm in [b, a] {
                            let mut p = path.clone();
                            p.push(arm);
                            let mut c = classes;
                            c.add_all(&self.node(arm).own);
                            stack.push((p, c));
                        }
                    }
                    end => frags.push(Fragment {
                        label: l,
                        path,
                        classes,
                        end,
                    }),
                }
            }
        }
        self.fragments = frags;
    }
}

/// The name of the counter parameter the instrumentation adds to every function.
pub const COUNTER_PARAM: &str = "__tessera_counts";

/// The labels, arms and fragments of `prog` (no run needed).
pub fn fragments(prog: &Program) -> FragmentMap {
    instrument(prog).1
}

/// Instruments a clone of `prog` for exact counting.
///
/// Every function gets one more parameter, last: [`COUNTER_PARAM`], a `long` array with
/// one element per node of the returned map; every call passes it on. At every label and
/// at the entry of every branch arm, its element is incremented:
///
/// * function entry: the first statement of the body;
/// * `while`/`for` header: `(cnt[h]++, c ? (cnt[body]++, 1) : (cnt[exit]++, 0))` in place of
///   the condition `c`; the latch of a `for`: `(cnt[l]++, step)`;
/// * `do`-`while`: the first statement of the body (header), and the condition as above
///   (latch, back arm, exit arm);
/// * parallel loops: before the loop and at the start of each iteration (header: one test
///   per iteration plus the final one), the body arm at each iteration, the exit arm after;
/// * `if`: the condition as above (then/else arms), the join after the statement;
/// * loop exit: the statement after the loop.
///
/// Nothing else changes: the counters are an array (shared by parallel-loop iterations,
/// which copy scalars), every access to it is in bounds, and no statement or value of the
/// original program is altered, so the instrumented program computes what the original
/// does, and the run's step count (loop iterations and calls) is the same.
///
/// The instrumented program is meant for the reference interpreter only: its counter
/// parameter comes after the locals in each function's variable table (the TIR's
/// "parameters first" convention is not kept), and it is not a program to optimise or
/// compile.
pub fn instrument(prog: &Program) -> (Program, FragmentMap) {
    let mut map = FragmentMap::default();
    let mut out = prog.clone();
    for (i, f) in out.functions.iter_mut().enumerate() {
        let cnt = VarId(f.vars.len() as u32);
        let mut b = Builder {
            func: &prog.functions[i],
            fid: FuncId(i as u32),
            cnt,
            nodes: &mut map.nodes,
            loops: vec![],
        };
        let entry = b.label(LabelKind::Entry, f.span);
        let (body, _) = b.list(&f.body, entry);
        let mut new_body = vec![b.inc_stmt(entry)];
        new_body.extend(body);
        walk_stmts_mut(&mut new_body, &mut |e| {
            if let ExprKind::Call(_, args) = &mut e.kind {
                args.push(Arg::Array {
                    array: cnt,
                    prefix: vec![],
                    span: e.span,
                });
            }
            true
        });
        f.body = new_body;
        f.vars.push(Var {
            name: COUNTER_PARAM.to_string(),
            kind: VarKind::Array {
                elem: ScalarTy::I64,
                rank: 1,
            },
            dims: vec![],
            is_param: true,
            scratch: false,
            span: f.span,
        });
        f.params.push(cnt);
    }
    let n = map.nodes.len() as i64;
    for f in &mut out.functions {
        let span = f.span;
        f.vars.last_mut().unwrap().dims = vec![int_expr(n, ScalarTy::I64, span)];
    }
    map.collect_fragments();
    (out, map)
}

fn int_expr(v: i64, ty: ScalarTy, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Int(v),
        ty: Some(ty),
        span,
    }
}

fn comma(a: Expr, b: Expr) -> Expr {
    let (ty, span) = (b.ty, b.span);
    Expr {
        kind: ExprKind::Comma(Box::new(a), Box::new(b)),
        ty,
        span,
    }
}

struct Builder<'a> {
    func: &'a Function,
    fid: FuncId,
    cnt: VarId,
    nodes: &'a mut Vec<Node>,
    /// Innermost last: (target of `continue`, target of `break`).
    loops: Vec<(NodeId, NodeId)>,
}

impl Builder<'_> {
    fn node(&mut self, kind: NodeKind, span: Span) -> NodeId {
        self.nodes.push(Node {
            func: self.fid,
            kind,
            span,
            own: ClassCounts::default(),
            end: NodeEnd::Exit,
        });
        NodeId(self.nodes.len() as u32 - 1)
    }
    fn label(&mut self, k: LabelKind, span: Span) -> NodeId {
        self.node(NodeKind::Label(k), span)
    }
    fn arm(&mut self, parent: NodeId, arm: ArmKind, span: Span) -> NodeId {
        self.node(NodeKind::Arm { parent, arm }, span)
    }
    fn set_end(&mut self, n: NodeId, end: NodeEnd) {
        self.nodes[n.0 as usize].end = end;
    }
    fn own(&mut self, n: NodeId) -> &mut ClassCounts {
        &mut self.nodes[n.0 as usize].own
    }
    fn cost_expr(&mut self, n: NodeId, e: &Expr) {
        let mut c = ClassCounts::default();
        expr_cost(self.func, e, &mut c);
        self.own(n).add_all(&c);
    }

    fn inc(&self, k: NodeId, span: Span) -> Expr {
        Expr {
            kind: ExprKind::IncDec {
                place: Place::Elem {
                    array: self.cnt,
                    indices: vec![int_expr(k.0 as i64, ScalarTy::I64, span)],
                    proven: 0,
                },
                inc: true,
                prefix: true,
            },
            ty: Some(ScalarTy::I64),
            span,
        }
    }
    fn inc_stmt(&self, k: NodeId) -> Stmt {
        Stmt::Expr(self.inc(k, Span::default()))
    }
    /// `c ? (cnt[a]++, 1) : (cnt[b]++, 0)`.
    fn split(&self, c: &Expr, a: NodeId, b: NodeId) -> Expr {
        let s = c.span;
        Expr {
            kind: ExprKind::Cond(
                Box::new(c.clone()),
                Box::new(comma(self.inc(a, s), int_expr(1, ScalarTy::Bool, s))),
                Box::new(comma(self.inc(b, s), int_expr(0, ScalarTy::Bool, s))),
            ),
            ty: Some(ScalarTy::Bool),
            span: s,
        }
    }

    /// Processes a statement list starting in node `cur`; returns the instrumented list and
    /// the node control is in when it falls off the end (`None` if it cannot).
    fn list(&mut self, list: &[Stmt], mut cur: NodeId) -> (Vec<Stmt>, Option<NodeId>) {
        let mut out = Vec::new();
        let mut it = list.iter();
        while let Some(s) = it.next() {
            match self.stmt(s, cur, &mut out) {
                Some(n) => cur = n,
                None => {
                    // Unreachable statements: kept as they are (calls get the counter
                    // argument later), no nodes.
                    out.extend(it.cloned());
                    return (out, None);
                }
            }
        }
        (out, Some(cur))
    }

    fn stmt(&mut self, s: &Stmt, cur: NodeId, out: &mut Vec<Stmt>) -> Option<NodeId> {
        match s {
            Stmt::Decl { init, .. } => {
                if let Some(e) = init {
                    self.cost_expr(cur, e);
                }
                self.own(cur).add(Class::Scalar, 1);
                out.push(s.clone());
                Some(cur)
            }
            Stmt::DeclArray { dims, .. } => {
                for d in dims {
                    self.cost_expr(cur, d);
                }
                self.own(cur).add(Class::Alloc, 1);
                self.own(cur).add(Class::Guard, 1);
                out.push(s.clone());
                Some(cur)
            }
            Stmt::Expr(e) => {
                self.cost_expr(cur, e);
                out.push(s.clone());
                Some(cur)
            }
            Stmt::If { cond, then, els } => {
                self.cost_expr(cur, cond);
                self.own(cur).add(Class::Guard, 1);
                let a = self.arm(cur, ArmKind::Then, cond.span);
                let b = self.arm(cur, ArmKind::Else, cond.span);
                self.set_end(cur, NodeEnd::Split(a, b));
                let join = self.label(LabelKind::Join, cond.span);
                let (t_out, t_end) = self.list(then, a);
                if let Some(n) = t_end {
                    self.set_end(n, NodeEnd::Goto(join));
                }
                let (e_out, e_end) = self.list(els, b);
                if let Some(n) = e_end {
                    self.set_end(n, NodeEnd::Goto(join));
                }
                out.push(Stmt::If {
                    cond: self.split(cond, a, b),
                    then: t_out,
                    els: e_out,
                });
                out.push(self.inc_stmt(join));
                Some(join)
            }
            Stmt::While {
                cond,
                body,
                step,
                is_for,
                vectorize,
            } => {
                let header = self.label(LabelKind::LoopHeader, cond.span);
                self.set_end(cur, NodeEnd::Goto(header));
                let latch = step
                    .as_ref()
                    .map(|st| self.label(LabelKind::LoopLatch, st.span));
                let exit = self.label(LabelKind::LoopExit, cond.span);
                self.cost_expr(header, cond);
                self.own(header).add(Class::Guard, 1);
                let ba = self.arm(header, ArmKind::Body, cond.span);
                let ea = self.arm(header, ArmKind::Exit, cond.span);
                self.set_end(header, NodeEnd::Split(ba, ea));
                self.set_end(ea, NodeEnd::Goto(exit));
                let cont = latch.unwrap_or(header);
                self.loops.push((cont, exit));
                let (b_out, b_end) = self.list(body, ba);
                self.loops.pop();
                if let Some(n) = b_end {
                    self.set_end(n, NodeEnd::Goto(cont));
                }
                if let (Some(l), Some(st)) = (latch, step) {
                    self.cost_expr(l, st);
                    self.set_end(l, NodeEnd::Goto(header));
                }
                out.push(Stmt::While {
                    cond: comma(self.inc(header, cond.span), self.split(cond, ba, ea)),
                    body: b_out,
                    step: match (latch, step) {
                        (Some(l), Some(st)) => Some(comma(self.inc(l, st.span), st.clone())),
                        _ => None,
                    },
                    is_for: *is_for,
                    vectorize: *vectorize,
                });
                out.push(self.inc_stmt(exit));
                Some(exit)
            }
            Stmt::DoWhile { body, cond } => {
                let header = self.label(LabelKind::LoopHeader, cond.span);
                self.set_end(cur, NodeEnd::Goto(header));
                let latch = self.label(LabelKind::LoopLatch, cond.span);
                let exit = self.label(LabelKind::LoopExit, cond.span);
                self.loops.push((latch, exit));
                let (b_out, b_end) = self.list(body, header);
                self.loops.pop();
                if let Some(n) = b_end {
                    self.set_end(n, NodeEnd::Goto(latch));
                }
                self.cost_expr(latch, cond);
                self.own(latch).add(Class::Guard, 1);
                let back = self.arm(latch, ArmKind::Back, cond.span);
                let ea = self.arm(latch, ArmKind::Exit, cond.span);
                self.set_end(latch, NodeEnd::Split(back, ea));
                self.set_end(back, NodeEnd::Goto(header));
                self.set_end(ea, NodeEnd::Goto(exit));
                let mut new_body = vec![self.inc_stmt(header)];
                new_body.extend(b_out);
                out.push(Stmt::DoWhile {
                    body: new_body,
                    cond: comma(self.inc(latch, cond.span), self.split(cond, back, ea)),
                });
                out.push(self.inc_stmt(exit));
                Some(exit)
            }
            Stmt::ParFor { var, lo, hi, body } => {
                self.cost_expr(cur, lo);
                self.cost_expr(cur, hi);
                self.own(cur).add(Class::Scalar, 1);
                let header = self.label(LabelKind::LoopHeader, lo.span);
                self.set_end(cur, NodeEnd::Goto(header));
                let exit = self.label(LabelKind::LoopExit, lo.span);
                // The iteration test: compare, increment and write the counter, branch.
                self.own(header).add(Class::IntArith, 2);
                self.own(header).add(Class::Scalar, 1);
                self.own(header).add(Class::Guard, 1);
                let ba = self.arm(header, ArmKind::Body, lo.span);
                let ea = self.arm(header, ArmKind::Exit, lo.span);
                self.set_end(header, NodeEnd::Split(ba, ea));
                self.set_end(ea, NodeEnd::Goto(exit));
                self.loops.push((header, exit));
                let (b_out, b_end) = self.list(body, ba);
                self.loops.pop();
                if let Some(n) = b_end {
                    self.set_end(n, NodeEnd::Goto(header));
                }
                let mut new_body = vec![self.inc_stmt(header), self.inc_stmt(ba)];
                new_body.extend(b_out);
                out.push(self.inc_stmt(header));
                out.push(Stmt::ParFor {
                    var: *var,
                    lo: lo.clone(),
                    hi: hi.clone(),
                    body: new_body,
                });
                out.push(self.inc_stmt(ea));
                out.push(self.inc_stmt(exit));
                Some(exit)
            }
            // Counted as its optimised version, the one the interpreter runs.
            Stmt::Block(b) | Stmt::Versioned { fast: b, .. } => {
                let (b_out, end) = self.list(b, cur);
                out.push(Stmt::Block(b_out));
                end
            }
            Stmt::Break | Stmt::Continue => {
                let end = match (self.loops.last(), s) {
                    (Some(&(_, exit)), Stmt::Break) => NodeEnd::Goto(exit),
                    (Some(&(cont, _)), _) => NodeEnd::Goto(cont),
                    (None, _) => NodeEnd::Exit,
                };
                self.set_end(cur, end);
                out.push(s.clone());
                None
            }
            Stmt::Return(e, _) => {
                if let Some(e) = e {
                    self.cost_expr(cur, e);
                }
                self.set_end(cur, NodeEnd::Exit);
                out.push(s.clone());
                None
            }
        }
    }
}

/// The arithmetic class of an operation computed in type `t`.
fn arith(t: Option<ScalarTy>) -> Class {
    match t {
        Some(t) if t.is_float() => Class::FloatArith,
        _ => Class::IntArith,
    }
}

fn strip_casts(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Cast(a) => strip_casts(a),
        _ => e,
    }
}

/// Address arithmetic and bound guards of an access of rank `rank`.
fn access_cost(rank: usize, proven: u64, c: &mut ClassCounts) {
    c.add(Class::IntArith, 2 * rank.saturating_sub(1) as u64);
    let unproven = (0..rank)
        .filter(|&d| !(d < 64 && proven & (1 << d) != 0))
        .count();
    c.add(Class::Guard, unproven as u64);
}

fn binop_cost(op: BinOp, t: ScalarTy, rhs: &Expr, c: &mut ClassCounts) {
    match op {
        BinOp::Div | BinOp::Rem => {
            c.add(Class::Math, 1);
            let constant = matches!(strip_casts(rhs).kind, ExprKind::Int(v) if v != 0);
            if t.is_int() && !constant {
                c.add(Class::Guard, 1);
            }
        }
        BinOp::Shl | BinOp::Shr => {
            c.add(Class::IntArith, 1);
            let width = if t == ScalarTy::I64 { 64 } else { 32 };
            let in_range =
                matches!(strip_casts(rhs).kind, ExprKind::Int(v) if (0..width).contains(&v));
            if !in_range {
                c.add(Class::Guard, 1);
            }
        }
        _ => c.add(arith(Some(t)), 1),
    }
}

/// Adds the instructions one evaluation of `e` executes. Both sides of `&&`, `||` and
/// `?:` are counted (a static upper bound: these branch inside an expression, below the
/// granularity of fragments).
fn expr_cost(f: &Function, e: &Expr, c: &mut ClassCounts) {
    let place_cost = |p: &Place, c: &mut ClassCounts, accesses: u64| match p {
        Place::Var(_) => c.add(Class::Scalar, accesses),
        Place::Elem {
            indices, proven, ..
        } => {
            for i in indices {
                expr_cost(f, i, c);
            }
            access_cost(indices.len(), *proven, c);
            c.add(Class::Array, accesses);
        }
    };
    match &e.kind {
        ExprKind::Int(_) | ExprKind::Float(_) => {}
        ExprKind::Var(_) => c.add(Class::Scalar, 1),
        ExprKind::Load {
            indices, proven, ..
        } => {
            for i in indices {
                expr_cost(f, i, c);
            }
            access_cost(indices.len(), *proven, c);
            c.add(Class::Array, 1);
        }
        ExprKind::Assign { place, op, value } => {
            expr_cost(f, value, c);
            match op {
                None => place_cost(place, c, 1),
                Some((bop, t)) => {
                    place_cost(place, c, 2);
                    binop_cost(*bop, *t, value, c);
                    // Conversions of the old value and of the result.
                    let pt = match place {
                        Place::Var(v) | Place::Elem { array: v, .. } => f.var(*v).scalar_ty(),
                    };
                    if pt != *t {
                        c.add(arith(Some(if pt.is_float() { pt } else { *t })), 2);
                    }
                }
            }
        }
        ExprKind::IncDec { place, .. } => {
            place_cost(place, c, 2);
            let pt = match place {
                Place::Var(v) | Place::Elem { array: v, .. } => f.var(*v).scalar_ty(),
            };
            c.add(arith(Some(pt)), 1);
        }
        ExprKind::Unary(_, a) => {
            expr_cost(f, a, c);
            c.add(arith(e.ty), 1);
        }
        ExprKind::Binary(op, a, b) => {
            expr_cost(f, a, c);
            expr_cost(f, b, c);
            binop_cost(*op, e.sty(), b, c);
        }
        ExprKind::Cmp(_, a, b) => {
            expr_cost(f, a, c);
            expr_cost(f, b, c);
            c.add(arith(a.ty), 1);
        }
        ExprKind::LogAnd(a, b) | ExprKind::LogOr(a, b) => {
            expr_cost(f, a, c);
            expr_cost(f, b, c);
            c.add(Class::IntArith, 1);
        }
        ExprKind::Cond(x, a, b) => {
            expr_cost(f, x, c);
            expr_cost(f, a, c);
            expr_cost(f, b, c);
            c.add(Class::IntArith, 1);
        }
        ExprKind::Cast(a) => {
            expr_cost(f, a, c);
            // Conversions of constants are folded.
            let constant = matches!(strip_casts(a).kind, ExprKind::Int(_) | ExprKind::Float(_));
            // A comparison or logical operator already yields a truth value.
            let truth = e.ty == Some(ScalarTy::Bool)
                && matches!(
                    a.kind,
                    ExprKind::Cmp(..) | ExprKind::LogAnd(..) | ExprKind::LogOr(..)
                );
            if a.ty != e.ty && !constant && !truth {
                let float =
                    a.ty.is_some_and(|t| t.is_float()) || e.ty.is_some_and(|t| t.is_float());
                c.add(
                    if float {
                        Class::FloatArith
                    } else {
                        Class::IntArith
                    },
                    1,
                );
            }
        }
        ExprKind::Call(_, args) => {
            for a in args {
                match a {
                    Arg::Scalar(x) => expr_cost(f, x, c),
                    Arg::Array { prefix, .. } => {
                        for i in prefix {
                            expr_cost(f, i, c);
                        }
                        c.add(Class::IntArith, 2 * prefix.len() as u64);
                        c.add(Class::Guard, prefix.len() as u64);
                    }
                }
            }
            c.add(Class::Call, 1);
        }
        ExprKind::Builtin(b, args) => {
            for a in args {
                expr_cost(f, a, c);
            }
            let class = match b {
                Builtin::Sqrt
                | Builtin::Exp
                | Builtin::Log
                | Builtin::Pow
                | Builtin::Sin
                | Builtin::Cos
                | Builtin::Tanh => Class::Math,
                Builtin::Min | Builtin::Max => Class::IntArith,
                _ => arith(e.ty),
            };
            c.add(class, 1);
        }
        ExprKind::Comma(a, b) => {
            expr_cost(f, a, c);
            expr_cost(f, b, c);
        }
    }
}
